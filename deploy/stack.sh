#!/usr/bin/env bash
# The production topology on this machine, without containers:
#   gunicorn (2 web processes) + Celery worker for the "ingest" queue + Celery worker for the
#   "imports" queue + Celery beat, against the local PostgreSQL and Redis, with production
#   settings (DEBUG=0, a real SECRET_KEY, JSON logs, compressed static files, /metrics guarded).
#
# Usage: deploy/stack.sh [run|start|stop|status]
#   run     (default, what `make stack` does) start, follow the logs, stop everything on Ctrl-C
#   start   start in the background and return once /readyz answers and both workers reply
#   stop    stop what `start` started (TERM to each process group, KILL after a grace period)
#   status  which processes are running, and /readyz
#
# Environment (defaults in brackets):
#   STACK_DIR          run directory: pid files, logs, secrets, metrics [${TMPDIR:-/tmp}/gpuatlas-stack]
#   STACK_PORT         web port on 127.0.0.1 [8800]
#   DATABASE_URL       [postgres://postgres@127.0.0.1:5432/gpuatlas_stack] (created if missing)
#   CELERY_BROKER_URL  [redis://127.0.0.1:6379/10]: its Redis must not evict (maxmemory-policy noeviction)
#   CACHE_URL          unset: a redis-server of the stack's own on STACK_CACHE_PORT [6390], bounded to
#                      STACK_CACHE_MAXMEMORY [256mb], evicting the least recently used (allkeys-lru);
#                      a policy is per instance, so the cache never shares the broker's
#   SECRET_KEY, METRICS_TOKEN  generated once into STACK_DIR when unset
#   STACK_WEB_WORKERS [2]  STACK_INGEST_CONCURRENCY [2]  STACK_IMPORTS_CONCURRENCY [1]
#   STACK_LOAD_DEMO    1 to run `manage.py load_demo` after migrating [0]
#   STACK_START_TIMEOUT seconds to wait for readiness [90]
#   STACK_RESTART_DELAY seconds before a worker or beat that exited is started again [5]
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
PY="$VENV/bin/python"
STACK_DIR="${STACK_DIR:-${TMPDIR:-/tmp}/gpuatlas-stack}"
STACK_PORT="${STACK_PORT:-8800}"
SERVICES=(web worker-ingest worker-imports beat)
CACHE_SERVICE=redis-cache
HOST_TAG="$(hostname)-${STACK_PORT}"

log() { printf '[stack] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  # A failed start must not leave half a stack running.
  if [[ "${LAUNCHED_ANY:-0}" == 1 ]]; then stop; fi
  exit 1
}

pid_of() { cat "$STACK_DIR/$1.pid" 2>/dev/null || true; }
alive() { local pid; pid="$(pid_of "$1")"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; }

secret_file() {  # secret_file NAME: a random value kept in STACK_DIR (mode 600) across restarts
  local file="$STACK_DIR/$1"
  if [[ ! -s "$file" ]]; then
    (umask 077 && "$PY" -c 'import secrets; print(secrets.token_urlsafe(48))' >"$file")
  fi
  cat "$file"
}

configure() {
  [[ -x "$PY" ]] || die "no virtual environment at $VENV: run 'make venv' first"
  mkdir -p "$STACK_DIR/logs"
  chmod 700 "$STACK_DIR"
  export DJANGO_SETTINGS_MODULE=gpuatlas.settings
  export DEBUG=0
  export SECRET_KEY="${SECRET_KEY:-$(secret_file secret_key)}"
  export METRICS_TOKEN="${METRICS_TOKEN:-$(secret_file metrics_token)}"
  export ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,localhost}"
  # Plain HTTP on loopback: no TLS terminator in front, so no redirect to https.
  export SECURE_SSL_REDIRECT=0
  export LOG_FORMAT="${LOG_FORMAT:-json}"
  export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/gpuatlas_stack}"
  export CELERY_BROKER_URL="${CELERY_BROKER_URL:-redis://127.0.0.1:6379/10}"
  if [[ -z "${CACHE_URL:-}" ]]; then
    OWN_CACHE=1
    export CACHE_URL="redis://127.0.0.1:${STACK_CACHE_PORT:-6390}/0"
  fi
  export PROMETHEUS_MULTIPROC_DIR="$STACK_DIR/prometheus"
  export GUNICORN_BIND="127.0.0.1:$STACK_PORT"
  export GUNICORN_WORKERS="${STACK_WEB_WORKERS:-2}"
  [[ "$DATABASE_URL" == postgres* ]] || die "DATABASE_URL must be PostgreSQL for the production stack"
  [[ "$CELERY_BROKER_URL" == redis* ]] || die "CELERY_BROKER_URL must be Redis for the production stack"
  # What a shell needs to run manage.py against this stack: `source $STACK_DIR/env`.
  (umask 077 && for name in DJANGO_SETTINGS_MODULE DEBUG SECRET_KEY METRICS_TOKEN ALLOWED_HOSTS SECURE_SSL_REDIRECT \
      LOG_FORMAT DATABASE_URL CELERY_BROKER_URL CACHE_URL PROMETHEUS_MULTIPROC_DIR; do
    printf 'export %s=%q\n' "$name" "${!name}"
  done >"$STACK_DIR/env")
}

database_ensure() {  # create the database named in DATABASE_URL when it does not exist
  "$PY" - <<'EOF'
import os, sys
import dj_database_url, psycopg
from psycopg import sql
cfg = dj_database_url.parse(os.environ["DATABASE_URL"])
params = {k: v for k, v in {"host": cfg["HOST"], "port": cfg["PORT"], "user": cfg["USER"], "password": cfg["PASSWORD"]}.items() if v}
try:
    with psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=5, **params) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [cfg["NAME"]]).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(cfg["NAME"])))
            print(f"[stack] created database {cfg['NAME']}", file=sys.stderr)
except psycopg.Error as exc:
    sys.exit(f"[stack] error: PostgreSQL at {cfg['HOST']}:{cfg['PORT']} is not usable: {exc}")
EOF
}

broker_check() {
  "$PY" - <<'EOF'
import os, sys
import redis
url = os.environ["CELERY_BROKER_URL"]
try:
    redis.Redis.from_url(url, socket_connect_timeout=3).ping()
except Exception as exc:
    sys.exit(f"[stack] error: the Redis broker {url} is not reachable: {exc}")
EOF
}

broker_policy_check() {  # the broker must keep every queued task: no eviction policy
  "$PY" - <<'EOF'
import os, sys
import redis
url = os.environ["CELERY_BROKER_URL"]
policy = redis.Redis.from_url(url, socket_connect_timeout=3).config_get("maxmemory-policy").get("maxmemory-policy")
if policy != "noeviction":
    sys.exit(f"[stack] error: the broker's Redis ({url}) evicts keys (maxmemory-policy {policy}): queued tasks "
             "could be lost. Use an instance with maxmemory-policy noeviction for the broker.")
EOF
}

cache_start() {  # the stack's own cache Redis, bounded and evicting (only when CACHE_URL was not given)
  [[ "${OWN_CACHE:-0}" == 1 ]] || return 0
  command -v redis-server >/dev/null || die "set CACHE_URL, or install redis-server for the stack's own cache"
  launch "$CACHE_SERVICE" redis-server --port "${STACK_CACHE_PORT:-6390}" --bind 127.0.0.1 --save "" --appendonly no \
    --maxmemory "${STACK_CACHE_MAXMEMORY:-256mb}" --maxmemory-policy allkeys-lru
}

launch() {  # launch NAME CMD...: in its own session (process group), logs and pid in STACK_DIR
  local name="$1"; shift
  if alive "$name"; then die "$name is already running (pid $(pid_of "$name")); run 'deploy/stack.sh stop' first"; fi
  setsid "$@" >>"$STACK_DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STACK_DIR/$name.pid"
  LAUNCHED_ANY=1
  log "started $name (pid $!)"
}

launch_supervised() {  # launch_supervised NAME CMD...: as launch, restarted whenever it exits
  # What compose's `restart: unless-stopped` does for the containers: a worker that exits (a broker
  # outage it did not survive, an out-of-memory kill) is started again after STACK_RESTART_DELAY
  # seconds. `stop` signals the whole process group: the loop and the worker go together.
  local name="$1"; shift
  launch "$name" bash -c '
    name="$1"; delay="$2"; shift 2
    while true; do
      "$@"
      rc=$?
      printf "[stack] %s exited with status %s: restarting in %s s\n" "$name" "$rc" "$delay"
      sleep "$delay"
    done' supervise "$name" "${STACK_RESTART_DELAY:-5}" "$@"
}

wait_ready() {
  local deadline=$(( $(date +%s) + ${STACK_START_TIMEOUT:-90} ))
  local url="http://127.0.0.1:$STACK_PORT/readyz"
  until "$PY" -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('$url', timeout=3).status == 200 else 1)" 2>/dev/null; do
    for name in "${SERVICES[@]}"; do
      alive "$name" || { tail -n 30 "$STACK_DIR/logs/$name.log" >&2 || true; die "$name exited during start-up (log: $STACK_DIR/logs/$name.log)"; }
    done
    (( $(date +%s) < deadline )) || die "web not ready after ${STACK_START_TIMEOUT:-90}s (log: $STACK_DIR/logs/web.log)"
    sleep 0.5
  done
  local pongs
  while true; do
    pongs="$("$VENV/bin/celery" -A gpuatlas inspect ping --timeout 2 -d "ingest@$HOST_TAG,imports@$HOST_TAG" 2>/dev/null \
      | grep -c pong || true)"
    (( pongs >= 2 )) && break
    for name in worker-ingest worker-imports; do
      alive "$name" || { tail -n 30 "$STACK_DIR/logs/$name.log" >&2 || true; die "$name exited during start-up"; }
    done
    (( $(date +%s) < deadline )) || die "workers did not answer a ping within ${STACK_START_TIMEOUT:-90}s"
    sleep 0.5
  done
}

start() {
  configure
  for name in "${SERVICES[@]}"; do
    if alive "$name"; then die "$name is already running (pid $(pid_of "$name")); run 'deploy/stack.sh stop' first"; fi
  done
  database_ensure
  broker_check
  broker_policy_check
  cache_start
  log "migrating $DATABASE_URL"
  "$PY" "$REPO/manage.py" migrate --noinput >"$STACK_DIR/logs/migrate.log" 2>&1 \
    || { tail -n 30 "$STACK_DIR/logs/migrate.log" >&2; die "migrate failed"; }
  "$PY" "$REPO/manage.py" collectstatic --noinput >"$STACK_DIR/logs/collectstatic.log" 2>&1 \
    || { tail -n 30 "$STACK_DIR/logs/collectstatic.log" >&2; die "collectstatic failed"; }
  if [[ "${STACK_LOAD_DEMO:-0}" == 1 ]]; then
    log "loading the demo data"
    "$PY" "$REPO/manage.py" load_demo
  fi
  # Multiprocess metrics: samples of processes from an earlier run must not be summed in.
  rm -rf "$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
  cd "$REPO"
  launch web "$VENV/bin/gunicorn" -c "$REPO/deploy/gunicorn.conf.py"
  launch_supervised worker-ingest "$VENV/bin/celery" -A gpuatlas worker -Q ingest -n "ingest@$HOST_TAG" \
    --concurrency "${STACK_INGEST_CONCURRENCY:-2}" --without-gossip --without-mingle --loglevel INFO
  launch_supervised worker-imports "$VENV/bin/celery" -A gpuatlas worker -Q imports -n "imports@$HOST_TAG" \
    --concurrency "${STACK_IMPORTS_CONCURRENCY:-1}" --without-gossip --without-mingle --loglevel INFO
  launch_supervised beat "$VENV/bin/celery" -A gpuatlas beat --schedule "$STACK_DIR/celerybeat-schedule" --loglevel INFO
  wait_ready
  log "ready: http://127.0.0.1:$STACK_PORT/  (readyz, healthz; metrics: Authorization: Bearer \$(cat $STACK_DIR/metrics_token))"
  log "logs: $STACK_DIR/logs/  manage.py against this stack: source $STACK_DIR/env"
}

stop() {
  local name pid deadline
  for name in "${SERVICES[@]}" "$CACHE_SERVICE"; do
    pid="$(pid_of "$name")"
    [[ -n "$pid" ]] || continue
    # setsid made each service the leader of its own process group: TERM reaches its children too.
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  deadline=$(( $(date +%s) + ${STACK_STOP_TIMEOUT:-30} ))
  for name in "${SERVICES[@]}" "$CACHE_SERVICE"; do
    pid="$(pid_of "$name")"
    [[ -n "$pid" ]] || continue
    while kill -0 -- "-$pid" 2>/dev/null && (( $(date +%s) < deadline )); do sleep 0.2; done
    if kill -0 -- "-$pid" 2>/dev/null; then
      log "$name did not stop in time: killing it"
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$STACK_DIR/$name.pid"
    log "stopped $name"
  done
}

status() {
  local rc=0 name
  for name in "${SERVICES[@]}"; do
    if alive "$name"; then log "$name running (pid $(pid_of "$name"))"; else log "$name not running"; rc=1; fi
  done
  "$PY" -c "import urllib.request, urllib.error
try:
    print(urllib.request.urlopen('http://127.0.0.1:$STACK_PORT/readyz', timeout=5).read().decode())
except urllib.error.HTTPError as exc:
    print(exc.code, exc.read().decode())
except OSError as exc:
    print('web unreachable:', exc)" || true
  return $rc
}

run() {
  trap 'log "stopping"; stop; exit 0' INT TERM
  start
  log "following the logs; Ctrl-C stops the stack"
  tail -n 0 -F "$STACK_DIR"/logs/{web,worker-ingest,worker-imports,beat}.log &
  local tail_pid=$!
  trap 'kill "$tail_pid" 2>/dev/null; log "stopping"; stop; exit 0' INT TERM
  while true; do
    for name in "${SERVICES[@]}"; do
      if ! alive "$name"; then
        kill "$tail_pid" 2>/dev/null || true
        log "$name exited: stopping the rest"; stop; exit 1
      fi
    done
    sleep 2
  done
}

case "${1:-run}" in
  run) run ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "unknown command '$1': use run, start, stop or status" ;;
esac
