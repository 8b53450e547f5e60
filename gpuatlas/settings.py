"""GPU Atlas settings: one module, configured from the environment.

With DEBUG=1 and nothing else set it runs the embedded default (SQLite, tasks executed in-process).
DEBUG is off unless set. Production sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, ALLOWED_HOSTS.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from pathlib import Path

import plotly
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from gpuatlas.cache import cache_settings
from gpuatlas.env import env_bool, env_broker_url, env_database, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# Off unless set: a deployment that forgets it does not serve tracebacks. Development sets DEBUG=1
# (the Makefile and the test suite do).
DEBUG = env_bool("DEBUG", False)
_DEV_SECRET = "dev-only-insecure-secret-key-change-me-0123456789abcdefghijklmnopqrstuvwxyz"  # noqa: S105 - only used when DEBUG is on
SECRET_KEY = env_str("SECRET_KEY") or (_DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set when DEBUG is off (DEBUG is off unless set; DEBUG=1 is the development mode)."
    )
if not DEBUG and SECRET_KEY == _DEV_SECRET:
    raise ImproperlyConfigured(
        "SECRET_KEY is the development key committed to this repository: with DEBUG=0 set SECRET_KEY to "
        "50+ random characters of your own."
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "django_prometheus",
    "accounts",
    "catalog",
    "benchmarks_app",
    "llm",
    "dashboard",
    "fitcalc",
    "watches",
]

MIDDLEWARE = [
    # Prometheus first and last so request latency covers every middleware; health probes and
    # /metrics are served before SSL redirection and host validation (internal plain-HTTP
    # requests by node IP).
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "gpuatlas.logging.RequestIdMiddleware",
    "gpuatlas.health.ProbeMiddleware",
    "gpuatlas.prometheus.MetricsEndpointMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "gpuatlas.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # 413 for oversized bodies before the CSRF check reads them (gpuatlas/request_limits.py).
    "gpuatlas.request_limits.RequestBodyLimitMiddleware",
    # 400 for a NUL byte in an admin query string (its filters would hand it to PostgreSQL).
    "gpuatlas.request_limits.QueryNulMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "gpuatlas.urls"
WSGI_APPLICATION = "gpuatlas.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "catalog.context_processors.currency",
                "catalog.context_processors.prices",
            ],
        },
    },
]

DATABASES = {"default": env_database("DATABASE_URL", str(BASE_DIR / "db.sqlite3"))}
# Optional streaming read replica: reads go there, writes and read-your-writes to the primary
# (gpuatlas/db_router.py explains which reads stay on the primary, and why).
if env_str("DATABASE_REPLICA_URL"):
    DATABASES["replica"] = env_database("DATABASE_REPLICA_URL", "unused") | {"TEST": {"MIRROR": "default"}}
    DATABASE_ROUTERS = ["gpuatlas.db_router.PrimaryReplicaRouter"]
    MIDDLEWARE.insert(
        MIDDLEWARE.index("gpuatlas.logging.RequestIdMiddleware") + 1, "gpuatlas.db_router.PrimaryPinMiddleware"
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Usernames are compared in one form (NFKC, case folded): accounts/usernames.py.
AUTHENTICATION_BACKENDS = ["accounts.backends.NormalisedUsernameBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "accounts:account"
LOGOUT_REDIRECT_URL = "dashboard:rankings"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["gpuatlas.formats"]
# Every number a template prints is grouped by thousands in the language's format ("8,406"): one
# format on every page (gpuatlas/numbers.py sets the significant figures). Identifiers written into
# forms and links go through |unlocalize.
USE_THOUSAND_SEPARATOR = True
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# plotly.js is served from the plotly package's own copy: no CDN, and always the
# version the Python figures were built for.
STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(plotly.__file__).parent / "package_data")]
# One storage whatever DEBUG says: `collectstatic` always writes the manifest that production
# pages need, and with DEBUG on the storage serves the unhashed names without one.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Uploads and request bodies: benchmark submissions are small JSON documents.
SUBMISSION_MAX_BYTES = env_int("SUBMISSION_MAX_BYTES", 1_000_000, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = SUBMISSION_MAX_BYTES + 64 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = SUBMISSION_MAX_BYTES + 64 * 1024
# A run's created_at may be this far after the moment the server received it (the machine's
# clock runs ahead); more is refused as a clock error.
SUBMISSION_CLOCK_SKEW_S = env_int("SUBMISSION_CLOCK_SKEW_S", 600, minimum=0)

# Celery: with no broker the embedded default runs tasks in-process, eagerly.
CELERY_BROKER_URL = env_broker_url("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
# In-process mode: Celery still takes a producer from its pool for an eager task. Kombu's
# in-memory transport, named with a host, so that nothing looks for a broker on localhost or warns
# that no hostname was supplied.
CELERY_BROKER_WRITE_URL = None if CELERY_BROKER_URL else "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# No loss: a task is acknowledged only after it ran, and re-queued when its worker dies.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A few messages reserved ahead, so that a task does not wait for the previous one's ack and the
# next fetch from Redis. Still acks_late: a reserved message is unacked and comes back if the worker dies.
CELERY_WORKER_PREFETCH_MULTIPLIER = env_int("CELERY_WORKER_PREFETCH_MULTIPLIER", 8, minimum=1)
# Celery's Django fixup closes every database connection before and after each task unless this
# is set; a new PostgreSQL backend per task costs more than an ingest. With it, a connection is
# recycled every N tasks, and each task first drops one past CONN_MAX_AGE or one failing a health
# check after an error (gpuatlas/celery.py), as a web request does. 0: close after every task.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000, minimum=0)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540, minimum=1)
# Every Redis call of the broker has a deadline: a broker that hangs (frozen, or gone without
# closing the connection) costs a request BROKER_TIMEOUT_S per attempt, not forever. Above the
# workers' BRPOP wait (1 s), which blocks on the same connection.
BROKER_TIMEOUT_S = env_int("BROKER_TIMEOUT_S", 2, minimum=2)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3600,
    "socket_timeout": BROKER_TIMEOUT_S,
    "socket_connect_timeout": BROKER_TIMEOUT_S,
}
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_TIMEOUT_S
# Kombu's Redis transport with the fix that lets a busy worker outlive a broker outage (gpuatlas/broker.py).
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT = "gpuatlas.broker:Transport"
# Workers and beat outlive a broker outage: they retry the connection at start-up and after a
# loss, without the default limit of 100 attempts (after which a worker exits). A worker that
# exits all the same is restarted by compose (restart: unless-stopped) or deploy/stack.sh.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A web request that queues a task tries the broker twice at most (a pooled connection the broker
# dropped, then a new one) before it gives up: with the timeouts above, a few seconds.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
CELERY_TASK_ROUTES = {
    "catalog.tasks.*": {"queue": "imports"},
    "benchmarks_app.tasks.*": {"queue": "ingest"},
    # The serving points and the refit that follow an import or an ingest: seconds of scipy.
    "llm.tasks.*": {"queue": "imports"},
    # The warm-up of the busiest pages after a bump: seconds of rendering, kept off the ingest queue.
    "dashboard.tasks.*": {"queue": "imports"},
    # The data-version bump the debounce delayed to its period's end: one cache write.
    "gpuatlas.data_version.*": {"queue": "ingest"},
    # Watches evaluated after a write, and their alerts sent: short network calls with short timeouts.
    "watches.tasks.*": {"queue": "imports"},
}
CELERY_TASK_DEFAULT_QUEUE = "ingest"
PRICE_IMPORT_DIR = env_str("PRICE_IMPORT_DIR", str(BASE_DIR / "catalog" / "data" / "prices"))
PRICE_IMPORT_EVERY_HOURS = env_int("PRICE_IMPORT_EVERY_HOURS", 6, minimum=1)
# An offer counts as current only while its snapshot lies within this many days of the newest
# price data in the database; pages say "prices as of DATE" once that newest data is older
# than this counted from today.
PRICE_FRESHNESS_DAYS = env_int("PRICE_FRESHNESS_DAYS", 14, minimum=1)
# fetch_prices: the published SkyPilot catalogue (v8 layout: <base>/<cloud>/vms.csv).
PRICE_FETCH_BASE_URL = env_str(
    "PRICE_FETCH_BASE_URL", "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8"
)
# The clouds with a v8 vms.csv in the catalogue repository (its catalogs/v8/ folder).
PRICE_FETCH_CLOUDS = env_list(
    "PRICE_FETCH_CLOUDS",
    [
        *("aws", "gcp", "oci", "lambda", "runpod", "vast", "nebius", "verda", "hyperbolic", "shadeform"),
        *("primeintellect", "jarvislabs", "hyperstack", "cudo", "seeweb", "mithril", "lium", "yotta"),
    ],
)
PRICE_FETCH_TIMEOUT_SECONDS = env_int("PRICE_FETCH_TIMEOUT_SECONDS", 60, minimum=1)
PRICE_FETCH_RETRIES = env_int("PRICE_FETCH_RETRIES", 3, minimum=0)
PRICE_FETCH_BACKOFF_SECONDS = env_int("PRICE_FETCH_BACKOFF_SECONDS", 2, minimum=0)
PRICE_FETCH_MAX_BYTES = env_int("PRICE_FETCH_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# Where the last downloaded copy of each file is kept (re-imported when a fetch says "not modified").
PRICE_FETCH_DIR = env_str("PRICE_FETCH_DIR", str(BASE_DIR / "var" / "price-fetch"))
PRICE_FETCH_EVERY_HOURS = env_int("PRICE_FETCH_EVERY_HOURS", 6, minimum=1)
# The sweeper that takes back submissions a dead worker claimed or a lost message left waiting
# (benchmarks_app.tasks.sweep_stuck_submissions) runs this often: with the grace periods below, a
# batch whose worker died is final within INGEST_CLAIM_GRACE_S + this + an ingest (under a minute).
SUBMISSION_SWEEP_EVERY_S = env_int("SUBMISSION_SWEEP_EVERY_S", 10, minimum=1)
CELERY_BEAT_SCHEDULE: dict[str, dict] = {
    "prices-reimport": {
        "task": "catalog.tasks.prices_import_directory_task",
        "schedule": timedelta(hours=PRICE_IMPORT_EVERY_HOURS),
    },
    "prices-fetch": {
        "task": "catalog.tasks.prices_fetch_task",
        "schedule": timedelta(hours=PRICE_FETCH_EVERY_HOURS),
    },
    # Cached pages are keyed by the day too (gpuatlas/data_version.py): render the busiest ones anew.
    "pages-warm": {"task": "dashboard.tasks.pages_warm_task", "schedule": crontab(minute=1, hour=0)},
    "submissions-sweep": {
        "task": "benchmarks_app.tasks.sweep_stuck_submissions",
        "schedule": timedelta(seconds=SUBMISSION_SWEEP_EVERY_S),
    },
}

CACHE_URL = env_str("CACHE_URL")
# The cache is an optimisation, never a dependency: when Redis does not answer within the
# timeouts, cache calls behave as misses and pages are computed from the database (gpuatlas/cache.py).
# Milliseconds: a frozen cache is a miss within half a second (a Redis call on a network answers in
# well under one).
CACHE_TIMEOUT_MS = env_int("CACHE_TIMEOUT_MS", 500, minimum=10)
# Entries of the in-process cache without CACHE_URL (Django's default is 300). A page writes a few
# (its body, the GPU lookup, one distinct-submitter entry per ranking it computes) and every
# throttled request one counter; past the limit the oldest third is dropped. The data version is
# read back from the database when its copy goes (gpuatlas/data_version.py).
CACHE_LOCAL_MAX_ENTRIES = env_int("CACHE_LOCAL_MAX_ENTRIES", 5000, minimum=100)
CACHES = {
    "default": (
        cache_settings(CACHE_URL, timeout_s=CACHE_TIMEOUT_MS / 1000)
        if CACHE_URL
        else {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "gpuatlas",
            "OPTIONS": {"MAX_ENTRIES": CACHE_LOCAL_MAX_ENTRIES},
        }
    )
}

# Reverse proxies in front of gunicorn that append the client's address to X-Forwarded-For
# (docs/deployment.md). Anything more in the header was written by the client and is ignored.
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0, minimum=0)
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("THROTTLE_ANON", "600/min"),
        "user": env_str("THROTTLE_USER", "2000/min"),
        "submissions": env_str("THROTTLE_SUBMISSIONS", "120/min"),
        # Form views (accounts/throttles.py): sign-in attempts per client address and per account
        # (site and admin), sign-ups per address, API tokens created per address and per account.
        "sign_in": env_str("THROTTLE_SIGN_IN", "10/min"),
        # Short: a stranger can spend it (accounts/throttles.py); the owner's known browser is counted apart.
        "sign_in_account": env_str("THROTTLE_SIGN_IN_ACCOUNT", "10/10m"),
        "sign_up": env_str("THROTTLE_SIGN_UP", "10/hour"),
        "token_create": env_str("THROTTLE_TOKEN_CREATE", "30/hour"),
        # Price watches created per account and per client address, on the page and the API.
        "watch_create": env_str("THROTTLE_WATCH_CREATE", "30/hour"),
        # Hugging Face model imports (each a request to the Hub), per address and per account.
        "hf_import": env_str("THROTTLE_HF_IMPORT", "20/hour"),
        # Pages computed for one address (gpuatlas/render_limits.py): cache misses of the rankings,
        # tier list and GPU pages, every comparison, fit page, CSV, catalogue list and feed.
        "page_render": env_str("THROTTLE_PAGE_RENDER", "120/min"),
    },
    # How many proxies in front of the web processes append to X-Forwarded-For: the client address
    # for throttles is the one the outermost trusted proxy saw. 0: X-Forwarded-For is ignored.
    "NUM_PROXIES": TRUSTED_PROXIES,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON nesting is bounded before parsing (api/parsers.py): a deep body is a 400, not a 500.
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
}
# Ingest: how long a claim or a queued submission may wait before the sweeper takes it back. A
# claim outlives its ingest by a few seconds at most: the ingest task is killed at 25 s
# (benchmarks_app.tasks.INGEST_TIME_LIMIT_S; a batch takes well under a second), so no live claim
# is taken back. A submission whose message was lost (its worker died holding it, the broker
# restarted empty) is queued again after the same period.
INGEST_CLAIM_GRACE_S = env_int("INGEST_CLAIM_GRACE_S", 30, minimum=1)
INGEST_RECEIVED_GRACE_S = env_int("INGEST_RECEIVED_GRACE_S", 30, minimum=1)
# An ingest task claims its submission and up to this many - 1 others waiting, oldest first.
INGEST_BATCH_SIZE = env_int("INGEST_BATCH_SIZE", 50, minimum=1)
# Cached pages and API lists are keyed by a data version that writers bump
# (gpuatlas/data_version.py). They live this long (0: off; off by default with the per-process
# local-memory cache, which a worker's bump cannot reach): a bump replaces them, not time.
DATA_VERSION_CACHE_SECONDS = env_int("DATA_VERSION_CACHE_SECONDS", 86_400 if CACHE_URL else 0, minimum=0)
# Entries whose key comes from a request's parameters (rankings and tier list bodies, API lists)
# are stored for at most this many distinct parameter sets per kind, data version and day:
# a flood of distinct query strings adds no keys past it (gpuatlas/data_version.py).
DATA_VERSION_CACHE_VARIANTS = env_int("DATA_VERSION_CACHE_VARIANTS", 50, minimum=0)
# The version changes at most once per this many seconds; a bump inside the period is made at
# its end, so that a stream of submissions does not keep every page cold (0: every bump at once).
DATA_VERSION_DEBOUNCE_S = env_int("DATA_VERSION_DEBOUNCE_S", 10, minimum=0)
# The warm-up of the busiest pages after a bump starts at most once per this many seconds.
PAGES_WARM_INTERVAL_S = env_int("PAGES_WARM_INTERVAL_S", 300, minimum=0)
SPECTACULAR_SETTINGS = {
    "TITLE": _("GPU Atlas API"),
    "DESCRIPTION": _(
        "GPUs, cloud prices, benchmark results and performance-per-dollar rankings: the data behind the "
        "GPU Atlas pages. [Back to GPU Atlas](/) · [Index of the endpoints](/api/v1/) · [Open data](/open-data/)"
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One schema name per choice set used by several fields.
    "ENUM_NAME_OVERRIDES": {
        "MeasuredOrEstimatedEnum": [("measured", "measured"), ("estimated", "estimated")],
        "TrustLabelEnum": "benchmarks_app.models.TrustLabel",
        "WatchKindEnum": "watches.models.WatchKind",
        "DeliveryStatusEnum": "watches.models.Delivery.Status",
        "ModelKindEnum": "fitcalc.presets.MODEL_KINDS",
        "ProviderKindEnum": "catalog.models.prices.Provider.Kind",
        "PriceBasisEnum": ["offer", "user", "none"],
        "TrainingPeakFormatEnum": ["fp8", "bf16", "fp16", "tf32"],
        "PrecisionEnum": "catalog.models.gpus.Precision",
    },
}

SIMPLE_HISTORY_REVERT_DISABLED = False

# Production hardening: on whenever DEBUG is off.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "strict-origin-when-cross-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (gpuatlas/security.py): scripts from our origin only (plotly.js is a
# static file, figures are json_script data); plotly.js injects styles, hence 'unsafe-inline' there.
CSP_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
# ReDoc runs its search in a blob: worker; that allowance applies to its page only. (Swagger UI's
# start-up script is a file of its own, api/views/index.py, so no page needs an inline script.)
CSP_PATH_OVERRIDES = {
    "/api/v1/redoc/": {"worker-src": ["'self'", "blob:"]},
}

# Logs: one JSON object per line in production (LOG_FORMAT=json, the default when DEBUG is off),
# readable text in development; every line carries the request id (gpuatlas/logging.py).
LOG_FORMAT = env_str("LOG_FORMAT", "text" if DEBUG else "json").lower()
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} is not a log format: use json or text.")
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL={LOG_LEVEL!r} is not a level: use DEBUG, INFO, WARNING, ERROR or CRITICAL.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "gpuatlas.logging.RequestContextFilter"}},
    "formatters": {
        "json": {"()": "gpuatlas.logging.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_context"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # RequestIdMiddleware logs every request (with its id); Django's own lines would repeat them.
        "django.request": {"level": "ERROR"},
        "django.server": {"level": "WARNING"},
    },
}

# Prometheus /metrics (gpuatlas/prometheus.py): served only with the bearer token or to the listed
# addresses/networks; with neither set the endpoint does not exist.
METRICS_TOKEN = env_str("METRICS_TOKEN")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN is too short: use at least 16 random characters.")
# An empty value means none (Compose passes optional variables as empty strings).
METRICS_ALLOWED_IPS = env_list("METRICS_ALLOWED_IPS", []) if env_str("METRICS_ALLOWED_IPS") else []
try:
    METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network(item, strict=False) for item in METRICS_ALLOWED_IPS]
except ValueError as exc:
    raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS has a malformed address or network: {exc}.") from None
METRICS_DB_CACHE_SECONDS = env_int("METRICS_DB_CACHE_SECONDS", 15, minimum=0)
# Celery hosts without a web process serve their own task samples here (0: off); same guard.
METRICS_WORKER_PORT = env_int("METRICS_WORKER_PORT", 0, minimum=0)
METRICS_WORKER_ADDR = env_str("METRICS_WORKER_ADDR", "0.0.0.0")  # noqa: S104 - guarded by token/IPs

# Fit calculator: import a model's config.json from Hugging Face by its id (fitcalc/hub.py, on a
# POST only; reads use the stored copy). Off by default (the demo and the tests are offline). HF_ENDPOINT is huggingface_hub's own
# variable, so a mirror (or a test server) stands in for https://huggingface.co.
FITCALC_HF_ONLINE = env_bool("FITCALC_HF_ONLINE", False)
HF_ENDPOINT = env_str("HF_ENDPOINT") or "https://huggingface.co"
FITCALC_HF_TIMEOUT_S = env_int("FITCALC_HF_TIMEOUT_S", 10, minimum=1)
FITCALC_HF_CACHE_DIR = env_str("FITCALC_HF_CACHE_DIR") or None

# Email (price-watch alerts): Django's SMTP backend once EMAIL_HOST is set, else each message is
# printed to the console (the embedded default sends nothing).
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", not env_bool("EMAIL_USE_SSL", False))
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive: set one of them.")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT_S", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "GPU Atlas <alerts@localhost>")
# The site's address as users reach it: the links in alert emails, webhooks and feeds.
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

# Price watches (watches/): how many an account may hold, and their webhooks. A webhook gets one
# POST per attempt with this timeout (connect and each read), no redirect followed; a failed
# attempt is retried this many times, after WATCH_WEBHOOK_BACKOFF_S, then twice that, and so on;
# a watch whose webhook failed this many deliveries in a row stops calling it.
WATCHES_PER_ACCOUNT_MAX = env_int("WATCHES_PER_ACCOUNT_MAX", 50, minimum=1)
WATCH_WEBHOOK_TIMEOUT_S = env_int("WATCH_WEBHOOK_TIMEOUT_S", 5, minimum=1)
WATCH_WEBHOOK_RETRIES = env_int("WATCH_WEBHOOK_RETRIES", 5, minimum=0)
WATCH_WEBHOOK_BACKOFF_S = env_int("WATCH_WEBHOOK_BACKOFF_S", 30, minimum=1)
WATCH_WEBHOOK_DISABLE_AFTER = env_int("WATCH_WEBHOOK_DISABLE_AFTER", 3, minimum=1)
# Networks a webhook may reach although they are not public (private, loopback...): none by
# default. For a deployment whose receivers live on its own network, and for tests.
try:
    WATCH_WEBHOOK_ALLOWED_NETWORKS = [
        ipaddress.ip_network(item, strict=False) for item in env_list("WATCH_WEBHOOK_ALLOWED_NETWORKS", []) if item
    ]
except ValueError as exc:
    raise ImproperlyConfigured(f"WATCH_WEBHOOK_ALLOWED_NETWORKS has a malformed network: {exc}.") from None
