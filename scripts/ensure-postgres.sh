#!/usr/bin/env bash
# Make sure a PostgreSQL server answers on 127.0.0.1:5432 with trust auth for user postgres and
# a database named `test` (what the test suite uses). Installs and starts it if needed.
set -euo pipefail

HOST=127.0.0.1
PORT=5432

ready() { pg_isready -q -h "$HOST" -p "$PORT" 2>/dev/null; }

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
# One apt-get at a time: `make test` sets up side by side (the Makefile's APT_GET takes this lock).
apt_get() { sudo_if_needed flock /tmp/pedl-apt-get.lock apt-get "$@"; }

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "PostgreSQL is not installed: installing it from the system packages"
  apt_get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive flock /tmp/pedl-apt-get.lock apt-get install -y -qq postgresql >/dev/null
fi

if ! ready; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  if ! grep -q "pedl-test" "$hba"; then
    # Local test server only: trust connections from this machine.
    sudo_if_needed sed -i '1i host all all 127.0.0.1/32 trust # pedl-test\nhost all all ::1/128 trust # pedl-test' "$hba"
  fi
  echo "Starting PostgreSQL $version"
  sudo_if_needed pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do ready && break; sleep 1; done
fi

ready || { echo "PostgreSQL did not come up on $HOST:$PORT" >&2; exit 1; }

if ! psql -h "$HOST" -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1; then
  psql -h "$HOST" -p "$PORT" -U postgres -c "CREATE DATABASE test" >/dev/null
fi
echo "PostgreSQL is ready on $HOST:$PORT"
