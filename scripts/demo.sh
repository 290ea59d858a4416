#!/usr/bin/env bash
# `make demo`: start an embedded master (SQLite) in the background if none is running, submit
# the digits random search to it, follow it to the end, and leave the master running.
# If the master dies (at start: port taken, bad database; or later), say so at once, with
# the end of its log, and exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

PEDL=.venv/bin/pedl
PY=.venv/bin/python
DEMO_HOME=${PEDL_DEMO_HOME:-$PWD/.pedl-demo}
PORT=${PEDL_DEMO_PORT:-8080}
URL=http://127.0.0.1:$PORT
LOG=$DEMO_HOME/master.log
PIDFILE=$DEMO_HOME/master.pid
# The demo master's admin password: made once, kept (mode 0600) for the next runs.
PASSFILE=$DEMO_HOME/admin-password
# The demo master's home (its database, its log, the admin password) is its user's only; a
# master refuses a database others can read, as an earlier demo's may be: made private here.
(umask 077 && mkdir -p "$DEMO_HOME")
chmod 700 "$DEMO_HOME"
chmod 600 "$DEMO_HOME"/pedl.db* "$DEMO_HOME"/master.log 2>/dev/null || true
if [ ! -s "$PASSFILE" ]; then
  (umask 077 && "$PY" -c "import secrets; print(secrets.token_urlsafe(12))" >"$PASSFILE")
fi
ADMIN_PASSWORD=$(cat "$PASSFILE")
# This script's own commands sign in as admin (a user's PEDL_USER/PEDL_PASSWORD win).
export PEDL_USER=${PEDL_USER:-admin}
export PEDL_PASSWORD=${PEDL_PASSWORD:-$ADMIN_PASSWORD}

# A root master runs its trials as an unprivileged user (trial_user, default nobody;
# docs/security.md). Where that user cannot run this checkout's Python (pyenv's under /root, say), the
# demo's trials could not start: the demo then runs them as root and says so.
# The master refuses an experiment whose trials that user could not start (422), so:
if [ "$(id -u)" = 0 ] && [ -z "${PEDL_TRIAL_USER+set}" ]; then
  if ! runuser -u nobody -- "$PWD/$PY" -c pass >/dev/null 2>&1; then
    echo "Running as root, and the trial user 'nobody' cannot run $(readlink -f "$PY"):"
    echo "  the demo's trials run as root (PEDL_TRIAL_USER=''). See docs/security.md (trials' OS user)."
    export PEDL_TRIAL_USER=
  elif [ -z "${PEDL_CHECKPOINT_DIR:-}" ]; then
    # The home is private (0700): nobody's checkpoints go beside it, where it can reach them.
    export PEDL_CHECKPOINT_DIR=$DEMO_HOME-checkpoints
  fi
fi

healthy() {
  "$PY" -c "import httpx, sys; sys.exit(0 if httpx.get('$URL/api/v1/health', timeout=2).status_code == 200 else 1)" \
    >/dev/null 2>&1
}

# A live process (a zombie, dead but not yet reaped, does not count).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  if [ -r "/proc/$1/stat" ]; then
    [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
  fi
}

# master_died WHEN: the reason, the end of the master's log, exit 1.
master_died() {
  local status=""
  if [ "$STARTED_HERE" = 1 ]; then
    wait "$MASTER_PID" 2>/dev/null && status=0 || status=$?
  fi
  rm -f "$PIDFILE"
  echo >&2
  echo "The PEDL master (pid $MASTER_PID${status:+, exit status $status}) died $1." >&2
  if [ -s "$LOG" ]; then
    echo "Last lines of $LOG:" >&2
    tail -n 15 "$LOG" | sed 's/^/  | /' >&2
  fi
  if grep -q "already in use" "$LOG" 2>/dev/null; then
    echo "Port $PORT is taken by another program: run with PEDL_DEMO_PORT=<another port>." >&2
  fi
  exit 1
}

MASTER_PID=""
STARTED_HERE=0
if [ -f "$PIDFILE" ] && ! alive "$(cat "$PIDFILE")"; then
  rm -f "$PIDFILE"  # left by a master that is gone
fi

if healthy; then
  echo "Using the master already running at $URL"
  if [ -f "$PIDFILE" ]; then MASTER_PID=$(cat "$PIDFILE"); fi
else
  echo "Starting a master at $URL (home: $DEMO_HOME, database: SQLite)"
  (umask 077 && : >>"$LOG")  # the master's log: private, like its home
  PEDL_ADMIN_PASSWORD=$ADMIN_PASSWORD nohup "$PEDL" master --home "$DEMO_HOME" --port "$PORT" >"$LOG" 2>&1 &
  MASTER_PID=$!
  STARTED_HERE=1
  echo "$MASTER_PID" >"$PIDFILE"
  for _ in $(seq 1 240); do
    healthy && break
    alive "$MASTER_PID" || master_died "while starting"
    sleep 0.25
  done
  if ! healthy; then
    alive "$MASTER_PID" || master_died "while starting"
    echo "The master (pid $MASTER_PID) did not answer at $URL within 60 s; see $LOG" >&2
    exit 1
  fi
fi

echo "Web UI: $URL/  (open it to watch the search live; sign in as admin, password $ADMIN_PASSWORD)"

# Follow the experiment in the background and watch the master meanwhile: if it goes, stop
# following and say why. (A background job ignores Ctrl-C, so the trap passes it on.)
"$PEDL" --master "$URL" experiment create examples/digits_keras/random.yaml examples/digits_keras --follow &
FOLLOW_PID=$!
trap 'kill -TERM "$FOLLOW_PID" 2>/dev/null; echo; echo "Stopped following; the experiment goes on at $URL."; exit 130' INT TERM
misses=0
while alive "$FOLLOW_PID"; do
  if [ -n "$MASTER_PID" ]; then
    if ! alive "$MASTER_PID"; then
      kill -TERM "$FOLLOW_PID" 2>/dev/null || true
      wait "$FOLLOW_PID" 2>/dev/null || true
      master_died "while the experiment ran"
    fi
    sleep 0.5
  else  # a master this script did not start: no pid to watch, ask it
    if healthy; then misses=0; else misses=$((misses + 1)); fi
    if [ "$misses" -ge 3 ]; then
      kill -TERM "$FOLLOW_PID" 2>/dev/null || true
      echo "The master at $URL stopped answering while the experiment ran." >&2
      exit 1
    fi
    sleep 2
  fi
done
trap - INT TERM
follow_status=0
wait "$FOLLOW_PID" || follow_status=$?
if [ "$follow_status" -ne 0 ]; then
  if [ -n "$MASTER_PID" ] && ! alive "$MASTER_PID"; then
    master_died "while the experiment ran"
  fi
  echo "The experiment did not complete (exit status $follow_status); the master's log is $LOG." >&2
  exit "$follow_status"
fi

echo
echo "The master is still running at $URL (REST API docs: $URL/docs); its log is $LOG."
echo "Web UI: $URL/  (experiments, charts, trials, logs, the cluster)"
echo "Sign in as admin, password $ADMIN_PASSWORD (kept in $PASSFILE):"
echo "  in the web UI's sign-in form, or:  $PEDL -m $URL user login admin"
echo "  (or set PEDL_USER=admin and PEDL_PASSWORD=\$(cat $PASSFILE) for the CLI and the SDK)"
echo "Look around:  $PEDL -m $URL experiment list   |   $PEDL -m $URL experiment describe 1"
if [ -f "$PIDFILE" ]; then
  if [ "$DEMO_HOME" = "$PWD/.pedl-demo" ]; then STOP="make demo-stop"; else STOP="PEDL_DEMO_HOME=$DEMO_HOME make demo-stop"; fi
  echo "Stop it with: kill $(cat "$PIDFILE")   (or: $STOP)"
fi
