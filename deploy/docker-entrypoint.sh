#!/bin/sh
# Container entrypoint: a clean Prometheus multiprocess directory for this container's processes,
# then the role's command (gunicorn, celery worker, celery beat or manage.py migrate).
set -eu
if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
  rm -rf "$PROMETHEUS_MULTIPROC_DIR"
  mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
fi
exec "$@"
