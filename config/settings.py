"""Settings, read from the environment (12-factor). Unset means the embedded default.

| variable | default |
|---|---|
| ``DATABASE_URL`` | SQLite file ``var/instantstart.sqlite3`` |
| ``REDIS_URL`` | the embedded Redis on ``var/redis.sock`` (started by the run command) |
| ``INSTANTSTART_SECRET_KEY`` / ``INSTANTSTART_SECRET_KEY_FILE`` | a key generated once into ``var/secret_key`` |
| ``INSTANTSTART_DEBUG`` | off |
| ``INSTANTSTART_ALLOWED_HOSTS`` | ``localhost,127.0.0.1,[::1],testserver`` |
| ``INSTANTSTART_SANDBOX`` | on (the offline sandbox stands in for AWS and Kubernetes) |
| ``INSTANTSTART_THROTTLE_TOKEN`` | ``1200/min`` per API token or user |
| ``INSTANTSTART_METRICS_TOKEN`` | empty: ``/metrics`` answers 404 (docs/deploy.md, "Metrics") |
| ``INSTANTSTART_WORKER_METRICS_PORT`` | 0: a Celery worker serves no ``/metrics`` of its own |
| ``INSTANTSTART_VAR_DIR`` | ``var/`` beside ``manage.py`` |
| ``INSTANTSTART_TRAINING_LOG_RETENTION_DAYS`` | 30 (stored training log lines of finished jobs) |
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from config.embedded import redis_url as embedded_redis_url

django_stubs_ext.monkeypatch()  # lets Django's generic classes (ModelAdmin[Team]) be subscripted at run time

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("INSTANTSTART_VAR_DIR", BASE_DIR / "var")).resolve()


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def load_secret_key() -> str:
    """The secret key: from the environment, from a named file, or generated once into ``var/``."""
    if os.environ.get("INSTANTSTART_SECRET_KEY"):
        return os.environ["INSTANTSTART_SECRET_KEY"]
    path = Path(os.environ.get("INSTANTSTART_SECRET_KEY_FILE", VAR_DIR / "secret_key"))
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError), os.fdopen(
            os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w"
        ) as key_file:
            key_file.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = load_secret_key()
DEBUG = env_flag("INSTANTSTART_DEBUG", False)
ALLOWED_HOSTS = env_list("INSTANTSTART_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("INSTANTSTART_CSRF_TRUSTED_ORIGINS", "http://localhost:3099,http://127.0.0.1:3099")
PORT = int(os.environ.get("INSTANTSTART_PORT", "3099"))
SANDBOX = env_flag("INSTANTSTART_SANDBOX", True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "axes",
    "accounts",
    "portal",
    "notifications",
    "operations",
    "costs",
    "clusters",
    "training",
    "inference",
    "governance",
    "spending",
    "mcp_server",
]

MIDDLEWARE = [
    "config.health.ProbeMiddleware",
    "config.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.RequestContextMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "config.middleware.DatabaseBusyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "accounts.middleware.CurrentTeamMiddleware",
    "axes.middleware.AxesMiddleware",
    "config.api.dry_run.DryRunMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.teams",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'instantstart.sqlite3'}",
        conn_max_age=int(os.environ.get("INSTANTSTART_DB_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests run on a file of the private var directory too: Django's default in-memory test database shares its
    # cache between threads, which locks whole tables and answers ``database table is locked`` at once instead of
    # waiting out the busy timeout as the product's file does.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-instantstart.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
#: django-axes first: it refuses a locked-out username and address before the password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "accounts.backends.AccessBackend",
                           "accounts.sso.backend.SsoBackend"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
#: Where the client address may be read from ``X-Forwarded-For``: the CIDRs of the reverse proxies in front of the
#: product (none by default: the connection's own address is the client's). ``accounts.addresses``.
INSTANTSTART_TRUSTED_PROXIES = env_list("INSTANTSTART_TRUSTED_PROXIES", "")
for _proxy in INSTANTSTART_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError as _error:
        raise ImproperlyConfigured(f"INSTANTSTART_TRUSTED_PROXIES: {_proxy!r} is not an address or CIDR") from _error

# Portal and Django admin sign-in (django-axes, docs/deploy.md): after AXES_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is locked out for the cool-off time; a successful sign-in resets the count.
AXES_FAILURE_LIMIT = int(os.environ.get("INSTANTSTART_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("INSTANTSTART_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "accounts.addresses.client_address"
AXES_LOCKOUT_CALLABLE = "accounts.views.login.locked_out"
AXES_VERBOSE = False
# REST and MCP (docs/api.md, ``too_many_auth_failures``): failed or missing API-token authentications per address.
INSTANTSTART_AUTH_FAILURE_LIMIT = int(os.environ.get("INSTANTSTART_AUTH_FAILURE_LIMIT", "30"))
INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS = int(os.environ.get("INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS", "300"))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on with OpenID Connect (docs/identity.md; mozilla-django-oidc, driven by accounts.sso): on when an issuer
# is set. The endpoints come from the issuer's discovery document; the client secret stays in the environment.
INSTANTSTART_OIDC_ISSUER = os.environ.get("INSTANTSTART_OIDC_ISSUER", "").rstrip("/")
INSTANTSTART_OIDC_PROVIDER_NAME = os.environ.get("INSTANTSTART_OIDC_PROVIDER_NAME", "single sign-on")
INSTANTSTART_OIDC_GROUPS_CLAIM = os.environ.get("INSTANTSTART_OIDC_GROUPS_CLAIM", "groups")
INSTANTSTART_OIDC_USERNAME_CLAIM = os.environ.get("INSTANTSTART_OIDC_USERNAME_CLAIM", "preferred_username")
#: ``off``: the sign-in page has no password form and password sign-in is refused, except for platform admins
#: (superusers) through ``/login/?break_glass=1`` — the way in when the IdP is down or misconfigured.
INSTANTSTART_LOCAL_PASSWORDS = env_flag("INSTANTSTART_LOCAL_PASSWORDS", True)
OIDC_RP_CLIENT_ID = os.environ.get("INSTANTSTART_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("INSTANTSTART_OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = os.environ.get("INSTANTSTART_OIDC_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = os.environ.get("INSTANTSTART_OIDC_SIGN_ALGO", "RS256")
#: ``client_secret_basic`` (the secret in an ``Authorization`` header) instead of ``client_secret_post`` (in the body).
OIDC_TOKEN_USE_BASIC_AUTH = env_flag("INSTANTSTART_OIDC_CLIENT_SECRET_BASIC", False)
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATE_CLASS = "accounts.views.sso.SsoStartView"
OIDC_CALLBACK_CLASS = "accounts.views.sso.SsoCallbackView"
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=failed"

REDIS_URL = os.environ.get("REDIS_URL") or embedded_redis_url(VAR_DIR)


def celery_broker_url(url: str) -> str:
    """Kombu spells a unix-socket Redis ``redis+socket://``; redis-py spells it ``unix://``."""
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "instantstart",
    }
}
#: redis-py 8 gives every read a 5 s socket timeout by default, as long as the layer's blocking BZPOPMIN wait
#: (``brpop_timeout`` 5 s): an idle subscriber's read timed out and crashed its WebSocket consumer every 5 s.
#: Reads get longer than that wait; a dead Redis is still noticed.
CHANNEL_LAYER_SOCKET_TIMEOUT = 15.0
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT}],
                   "prefix": "instantstart:channels"},
    }
}
CELERY_BROKER_URL = celery_broker_url(REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_ALWAYS_EAGER = env_flag("INSTANTSTART_CELERY_EAGER", False)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("INSTANTSTART_MAX_BODY_BYTES", str(1024 * 1024)))

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind TLS (docs/deploy.md): INSTANTSTART_HTTPS=1 when browsers reach the portal over https (directly or through a
# proxy named in INSTANTSTART_TRUSTED_PROXIES, whose X-Forwarded-Proto uvicorn then believes): cookies are sent over
# TLS only, plain http is redirected, and HSTS (INSTANTSTART_HSTS_SECONDS, a year by default) tells browsers to
# never use http again.
HTTPS = env_flag("INSTANTSTART_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = int(os.environ.get("INSTANTSTART_HSTS_SECONDS") or (str(365 * 24 * 3600) if HTTPS else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("INSTANTSTART_HSTS_INCLUDE_SUBDOMAINS", False)
#: The Content-Security-Policy of every HTML answer (config.middleware.ContentSecurityPolicyMiddleware): the portal,
#: Django admin and the API docs load scripts, styles and images only from the site itself — no inline script, style
#: or event handler, no eval — and cannot be framed.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                           "form-action 'self'; frame-ancestors 'none'")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.IsAuthenticatedActor"],
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"token": os.environ.get("INSTANTSTART_THROTTLE_TOKEN", "1200/min")},
    "DEFAULT_PAGINATION_CLASS": "config.api.pagination.CreatedCursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.api.parsers.LimitedJSONParser"],
    "EXCEPTION_HANDLER": "config.api.exceptions.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "InstantStart API",
    "DESCRIPTION": "Control plane for Amazon SageMaker HyperPod clusters on Amazon EKS.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "ClusterStateEnum": "clusters.models.ClusterState",
        "DependencyStateEnum": "clusters.models.DependencyState",
        "StorageKindEnum": "clusters.models.StorageKind",
        "StorageStateEnum": "clusters.models.StorageState",
        "DownloadSourceEnum": "inference.models.DownloadSource",
        "DownloadStateEnum": "inference.models.DownloadState",
        "EndpointStateEnum": "inference.models.EndpointState",
        "EndpointKindEnum": "inference.models.EndpointKind",
        "EngineEnum": "inference.models.Engine",
        "ExposureEnum": "inference.models.Exposure",
        "ModelSourceEnum": "inference.models.ModelSource",
        "SourceEnum": "config.context.Source",
        "RoleEnum": "accounts.models.Role",
        "JobStateEnum": "training.models.JobState",
        "InvitationStateEnum": "accounts.models.InvitationState",
        "PolicyStateEnum": "governance.models.PolicyState",
        "SharingStrategyEnum": "governance.models.SharingStrategy",
        "PreemptionEnum": "governance.models.Preemption",
    },
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 999_999_999_999_999_999}},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema.add_error_responses",
        "config.api.schema.add_idempotency_key_header",
        "config.api.schema.allow_empty_filter_values",
        "config.api.dry_run.add_dry_run_parameter",
    ],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.logging.JsonFormatter"}},
    "filters": {"refusals": {"()": "config.logging.RefusalsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": os.environ.get("INSTANTSTART_LOG_LEVEL", "INFO")},
    "loggers": {"django.server": {"level": "WARNING"}, "mcp": {"level": "WARNING"}, "axes": {"level": "WARNING"},
                "django.request": {"filters": ["refusals"]}},
}

INSTANTSTART_FIRST_ADMIN_USERNAME = os.environ.get("INSTANTSTART_ADMIN_USERNAME", "admin")
INSTANTSTART_FIRST_ADMIN_PASSWORD = os.environ.get("INSTANTSTART_ADMIN_PASSWORD", "")
INSTANTSTART_TOKEN_DEFAULT_DAYS = int(os.environ.get("INSTANTSTART_TOKEN_DEFAULT_DAYS", "90"))
INSTANTSTART_TOKEN_MAX_DAYS = int(os.environ.get("INSTANTSTART_TOKEN_MAX_DAYS", "365"))
#: The bearer token a Prometheus scraper sends to ``/metrics`` (config.metrics); empty: the endpoint answers 404.
INSTANTSTART_METRICS_TOKEN = os.environ.get("INSTANTSTART_METRICS_TOKEN", "")
#: The port a Celery worker's main process serves its own ``/metrics`` on (``config.metrics.serve_worker_metrics``,
#: same token); 0, the default: none (one host's processes share ``PROMETHEUS_MULTIPROC_DIR`` and web serves them).
INSTANTSTART_WORKER_METRICS_PORT = int(os.environ.get("INSTANTSTART_WORKER_METRICS_PORT", "0"))
#: How long a team invitation (and its link) can be accepted.
INSTANTSTART_INVITATION_DAYS = int(os.environ.get("INSTANTSTART_INVITATION_DAYS", "7"))
#: Who may create teams (docs/architecture.md, "Platform policy"): ``platform_admins`` (the default: a newcomer asks a
#: platform admin, who creates the team and makes them its admin) or ``anyone`` signed in.
INSTANTSTART_TEAM_CREATION = os.environ.get("INSTANTSTART_TEAM_CREATION", "platform_admins")
if INSTANTSTART_TEAM_CREATION not in ("platform_admins", "anyone"):
    raise ImproperlyConfigured("INSTANTSTART_TEAM_CREATION must be platform_admins or anyone, not "
                               f"{INSTANTSTART_TEAM_CREATION!r}")

# Operations engine (docs/operations.md): polling, leases, the sweeper and the cloud-call rate limiter.
#: With the sandbox, the engine's schedules run at the sandbox's clock (``sandbox.clock``: 0.05 unless set).
OPERATIONS_POLL_SCALE = float(os.environ.get("INSTANTSTART_OPERATIONS_POLL_SCALE", os.environ.get(
    "INSTANTSTART_SANDBOX_TIME_SCALE", "0.05") if SANDBOX else "1.0"))
OPERATIONS_POLL_MIN_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_POLL_MIN_SECONDS", "0.5"))
OPERATIONS_POLL_MAX_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_POLL_MAX_SECONDS", "20"))
OPERATIONS_CLAIM_LEASE_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_LEASE_SECONDS", "120"))
OPERATIONS_SWEEP_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_SWEEP_SECONDS", "15"))
OPERATIONS_SWEEP_GRACE_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_SWEEP_GRACE_SECONDS", "60"))
OPERATIONS_SWEEP_BATCH = 500
# Phase schedules (operations.schedule, operations.wakeups; docs/operations.md "When the engine polls").
OPERATIONS_KNOWN_DURATIONS = env_flag("INSTANTSTART_OPERATIONS_KNOWN_DURATIONS", True)
OPERATIONS_EVENTS = env_flag("INSTANTSTART_OPERATIONS_EVENTS", True)
OPERATIONS_SHARED_READS = env_flag("INSTANTSTART_OPERATIONS_SHARED_READS", True)
OPERATIONS_EVENTS_CHANNEL = os.environ.get("INSTANTSTART_OPERATIONS_EVENTS_CHANNEL", "instantstart-state-changes")
OPERATIONS_EVENTS_CHANNEL_TTL = 300
OPERATIONS_EVENTS_DRAIN_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_EVENTS_DRAIN_SECONDS", "2"))
OPERATIONS_EVENTS_DRAIN_THREADS = int(os.environ.get("INSTANTSTART_OPERATIONS_EVENTS_DRAIN_THREADS", "4"))
OPERATIONS_EVENTS_SAFETY_POLL_SECONDS = float(os.environ.get("INSTANTSTART_OPERATIONS_EVENTS_SAFETY_POLL_SECONDS",
                                                             "60"))
OPERATIONS_STEPS_PER_RUN = 8
OPERATIONS_CLOUD_CALLS_PER_SECOND = float(os.environ.get("INSTANTSTART_CLOUD_CALLS_PER_SECOND", "10"))
OPERATIONS_CLOUD_CALLS_BURST = float(os.environ.get("INSTANTSTART_CLOUD_CALLS_BURST", "20"))
#: The sandbox demo pipeline (``POST /api/v1/demo-operations``); on with the sandbox, off against real AWS.
OPERATIONS_DEMO = env_flag("INSTANTSTART_DEMO_OPERATIONS", SANDBOX)

# Notifications (docs/notifications.md): webhook and e-mail delivery of team events, in Celery.
#: The portal's address as people reach it: events link their subject (``subject.url``) under it.
INSTANTSTART_PUBLIC_URL = os.environ.get("INSTANTSTART_PUBLIC_URL", "http://localhost:3099")
NOTIFICATIONS_TIMEOUT_SECONDS = float(os.environ.get("INSTANTSTART_NOTIFICATIONS_TIMEOUT_SECONDS", "10"))
NOTIFICATIONS_MAX_ATTEMPTS = int(os.environ.get("INSTANTSTART_NOTIFICATIONS_MAX_ATTEMPTS", "6"))
NOTIFICATIONS_RETRY_BASE_SECONDS = float(os.environ.get("INSTANTSTART_NOTIFICATIONS_RETRY_BASE_SECONDS", "10"))
NOTIFICATIONS_RETRY_MAX_SECONDS = float(os.environ.get("INSTANTSTART_NOTIFICATIONS_RETRY_MAX_SECONDS", "600"))
#: Failed deliveries in a row after which a subscription is turned off (and the team's admins told).
NOTIFICATIONS_DISABLE_AFTER = int(os.environ.get("INSTANTSTART_NOTIFICATIONS_DISABLE_AFTER", "5"))
#: Webhooks to plain http and to loopback hosts (a receiver on the same machine): for development only.
NOTIFICATIONS_ALLOW_LOOPBACK = env_flag("INSTANTSTART_NOTIFICATIONS_ALLOW_LOOPBACK", DEBUG)
#: How often the node-health watch looks at the nodes of clusters whose teams want ``node.unhealthy``.
NODE_HEALTH_WATCH_SECONDS = float(os.environ.get("INSTANTSTART_NODE_HEALTH_WATCH_SECONDS", "300"))
#: How often the meter looks at every cluster's nodes to record node lifetimes (docs/spending.md); a node no longer
#: listed is terminated at most this long after it was last seen.
SPENDING_METER_SECONDS = float(os.environ.get("INSTANTSTART_SPENDING_METER_SECONDS", "300"))
#: Django's mail backend: the console (mail printed by the worker) unless SMTP is configured (``EMAIL_HOST``).
EMAIL_HOST = os.environ.get("INSTANTSTART_EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("INSTANTSTART_EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("INSTANTSTART_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("INSTANTSTART_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = env_flag("INSTANTSTART_EMAIL_USE_TLS", True)
EMAIL_BACKEND = os.environ.get("INSTANTSTART_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"
                               if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("INSTANTSTART_EMAIL_FROM", "InstantStart <instantstart@localhost>")

# The system node group every created cluster gets (docs/node-groups.md): EKS managed CPU nodes for controllers.
SYSTEM_NODES_INSTANCE_TYPE = os.environ.get("INSTANTSTART_SYSTEM_NODES_INSTANCE_TYPE", "m5.large")
SYSTEM_NODES_COUNT = int(os.environ.get("INSTANTSTART_SYSTEM_NODES_COUNT", "2"))

# Training logs (docs/training-logs.md): stored lines of jobs finished longer ago than this are purged hourly.
INSTANTSTART_TRAINING_LOG_RETENTION_DAYS = int(os.environ.get("INSTANTSTART_TRAINING_LOG_RETENTION_DAYS", "30"))
#: Follow training logs in a thread of the Celery worker instead of a process of their own (training.logs.in_worker):
#: ``make run`` turns it on; deployments run ``manage.py follow_training_logs`` and leave it off.
TRAINING_LOGS_IN_WORKER = env_flag("INSTANTSTART_TRAINING_LOGS_IN_WORKER", False)
#: Modules with tasks that ``autodiscover_tasks`` (``<app>.tasks``) does not find, and config.metrics (whose signal
#: handlers time every task).
CELERY_IMPORTS = ["training.logs.tasks", "config.metrics"]

CELERY_BEAT_SCHEDULE = {
    "purge-idempotency-records": {"task": "operations.tasks.purge_idempotency_records", "schedule": 3600.0},
    "sweep-operations": {"task": "operations.tasks.sweep_operations", "schedule": OPERATIONS_SWEEP_SECONDS},
    "purge-training-log-lines": {"task": "training.logs.tasks.purge_training_log_lines", "schedule": 3600.0},
    "sweep-notification-deliveries": {"task": "notifications.tasks.sweep_notification_deliveries",
                                      "schedule": 60.0},
    "watch-node-health": {"task": "clusters.tasks.watch_node_health", "schedule": NODE_HEALTH_WATCH_SECONDS},
    "meter-node-hours": {"task": "spending.tasks.meter_node_hours", "schedule": SPENDING_METER_SECONDS},
}
