# GPU Atlas production image: one image, four roles (web, worker, beat, one-shot migrate),
# chosen by the command. Build: docker build -t gpuatlas .
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=gpuatlas.settings \
    DEBUG=0 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus

RUN groupadd --system gpuatlas && useradd --system --gid gpuatlas --home-dir /app --shell /usr/sbin/nologin gpuatlas
WORKDIR /app

# The code runs from /app (templates, static files and catalogue data live beside it), so it is
# installed in editable mode; psycopg[binary] needs no compiler or libpq headers.
COPY . /app
RUN pip install -e . -e ./bench_client \
 && DEBUG=0 SECRET_KEY=collectstatic-at-build-time-only-not-a-secret-0123456789abcdef \
    ALLOWED_HOSTS=build python manage.py collectstatic --noinput \
 && chmod +x deploy/docker-entrypoint.sh

USER gpuatlas
EXPOSE 8000
ENTRYPOINT ["/app/deploy/docker-entrypoint.sh"]
CMD ["gunicorn", "-c", "deploy/gunicorn.conf.py"]
