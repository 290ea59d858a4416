#!/usr/bin/env bash
# `make demo`: start an embedded master (SQLite) in the background if none is running, submit
# the digits random search to it, follow it to the end, and leave the master running.
set -euo pipefail
cd "$(dirname "$0")/.."

PEDL=.venv/bin/pedl
PY=.venv/bin/python
DEMO_HOME=${PEDL_DEMO_HOME:-$PWD/.pedl-demo}
PORT=${PEDL_DEMO_PORT:-8080}
URL=http://127.0.0.1:$PORT
mkdir -p "$DEMO_HOME"

healthy() {
  "$PY" -c "import httpx, sys; sys.exit(0 if httpx.get('$URL/api/v1/health', timeout=2).status_code == 200 else 1)" \
    >/dev/null 2>&1
}

if healthy; then
  echo "Using the master already running at $URL"
else
  echo "Starting a master at $URL (home: $DEMO_HOME, database: SQLite)"
  nohup "$PEDL" master --home "$DEMO_HOME" --port "$PORT" >"$DEMO_HOME/master.log" 2>&1 &
  echo $! >"$DEMO_HOME/master.pid"
  for _ in $(seq 1 60); do healthy && break; sleep 0.5; done
  healthy || { echo "The master did not start; see $DEMO_HOME/master.log" >&2; exit 1; }
fi

"$PEDL" --master "$URL" experiment create examples/digits_keras/random.yaml examples/digits_keras --follow

echo
echo "The master is still running at $URL (REST API docs: $URL/docs); its log is $DEMO_HOME/master.log."
echo "Look around:  $PEDL -m $URL experiment list   |   $PEDL -m $URL experiment describe 1"
if [ -f "$DEMO_HOME/master.pid" ]; then
  echo "Stop it with: kill $(cat "$DEMO_HOME/master.pid")   (or: make demo-stop)"
fi
