"""Argo-ML settings: one file, driven by the environment (see README "Configuration").

Defaults are the embedded development stack (SQLite in the project folder, the Redis that `make run`
starts on a Unix socket under `.dev/`). Production sets DATABASE_URL, REDIS_URL, SECRET_KEY and the cluster.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

import limits  # every bound on tenant input; no Django in it
from kube import ratelimit  # the shipped write limit; a module with no Django in it
from web import csp

from .env import env_bool, env_choice, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
# Where the embedded stack keeps its SQLite database, Redis socket, kubeconfig and admin credentials.
DEV_DIR = Path(env_str("ARGOML_DEV_DIR", str(BASE_DIR / ".dev"))).resolve()

DEBUG = env_bool("DEBUG", default=False)

# Set by manage.py for the commands that sign nothing (render_*, argo_lint, transpile, ping_worker): they
# need no SECRET_KEY and run with no environment set.
OFFLINE_COMMAND = env_str("ARGOML_OFFLINE_COMMAND")

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if DEBUG:
        SECRET_KEY = "insecure-development-key-only-used-with-DEBUG"  # noqa: S105
    elif OFFLINE_COMMAND:
        SECRET_KEY = secrets.token_urlsafe(50)  # never stored: nothing this process signs outlives it
    else:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) is required unless DEBUG=true.")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "argoml_site",
    "access",
    "kube",
    "jobs",
    "hyperparam",
    "tensorboard",
    "webhooks",
    "garbage",
    "pipelines",
    "dashboard",
    "trainer",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # TENSORBOARD_BASE_URL's host is served the TensorBoard proxy only (argoml_site/tensorboardorigin.py).
    "argoml_site.tensorboardorigin.TensorboardOriginMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "web.csp.ContentSecurityPolicyMiddleware",
    # With DEBUG on, Django answers the URL resolver's 404s with an HTML page even under /api/.
    "argoml_site.apinotfound.ApiNotFoundMiddleware",
    # Innermost, so the headers above are added to its refusal too (docs/security.md, "Body sizes").
    "web.responsesize.ResponseSizeMiddleware",
]

ROOT_URLCONF = "argoml_site.urls"
WSGI_APPLICATION = "argoml_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "argoml_site" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Bounds on tenant input (limits package, docs/security.md "Limits") -------------------------------
# Every count and size a tenant's request, manifest or ConfigMap may reach: MAX_<FIELD> overrides a default
# (MAX_REPLICAS_PER_JOB, MAX_TRIALS_PER_SWEEP, ...). Configured here so every process (web, webhooks,
# workers, commands) enforces the same bounds; the pure cores read them with limits.current().
LIMITS = limits.Limits(
    **{
        field: env_int(limits.Limits.setting_name(field), getattr(limits.DEFAULTS, field), minimum=1)
        for field in limits.fields()
    }
)
limits.configure(LIMITS)
# --- end of bounds on tenant input --------------------------------------------------------------------

# --- Database -------------------------------------------------------------------------------------
_database_url = env_str("DATABASE_URL", f"sqlite:///{DEV_DIR / 'db.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL Django understands: {exc}") from exc
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default is shared by the web server and the worker; wait for a lock instead of failing.
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis and Celery -----------------------------------------------------------------------------
EMBEDDED_REDIS_SOCKET = DEV_DIR / "redis.sock"
REDIS_URL = env_str("REDIS_URL", f"unix://{EMBEDDED_REDIS_SOCKET}?db=0")
if not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(f"REDIS_URL={REDIS_URL!r} must start with redis://, rediss:// or unix://.")


def _celery_url(redis_url: str) -> str:
    """Kombu spells a Unix-socket Redis `redis+socket://`; redis-py spells it `unix://`."""
    if redis_url.startswith("unix://"):
        path, _, query = redis_url.removeprefix("unix://").partition("?")
        db = dict(part.split("=", 1) for part in query.split("&") if "=" in part).get("db", "0")
        return f"redis+socket://{path}?virtual_host={db}"
    return redis_url


CELERY_BROKER_URL = _celery_url(REDIS_URL)
if CELERY_BROKER_URL.startswith("redis://"):
    # One redis-py client per channel, not one per ack (kube/controller/queue/transport.py).
    CELERY_BROKER_TRANSPORT = "kube.controller.queue.transport:Transport"
CELERY_RESULT_BACKEND = CELERY_BROKER_URL
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES_NAMES = ("reconcile", "default")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Must exceed the longest task, or Redis redelivers a task that is still running.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=60)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
# Celery workers serve Prometheus metrics on this port (0: off); see argoml_site/metrics.py.
WORKER_METRICS_PORT = env_int("WORKER_METRICS_PORT", 0, minimum=0)
# The bearer token Prometheus sends to /metrics (web and workers). Empty: only staff sessions on the web.
METRICS_TOKEN = env_str("METRICS_TOKEN")
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# --- The reconcile queue (docs/concurrency.md) -----------------------------------------------------
KUBE_QUEUE_BACKOFF_BASE_SECONDS = env_float("KUBE_QUEUE_BACKOFF_BASE_SECONDS", 0.005, minimum=0.001)
KUBE_QUEUE_BACKOFF_MAX_SECONDS = env_float("KUBE_QUEUE_BACKOFF_MAX_SECONDS", 1000.0, minimum=0.001)
KUBE_QUEUE_LEASE_SECONDS = env_float("KUBE_QUEUE_LEASE_SECONDS", 10.0, minimum=0.03)
KUBE_QUEUE_SWEEP_INTERVAL_SECONDS = env_float("KUBE_QUEUE_SWEEP_INTERVAL_SECONDS", 2.0, minimum=0.01)
KUBE_QUEUE_RESEND_AFTER_SECONDS = env_float("KUBE_QUEUE_RESEND_AFTER_SECONDS", 300.0, minimum=0.1)
KUBE_QUEUE_WORKER_TIMEOUT_SECONDS = env_float("KUBE_QUEUE_WORKER_TIMEOUT_SECONDS", 6.0, minimum=0.1)
KUBE_RECONCILE_TIME_LIMIT_SECONDS = env_int("KUBE_RECONCILE_TIME_LIMIT_SECONDS", 600, minimum=1)
# How often the leader looks whether Redis lost the queue's data (then it enqueues every key again).
KUBE_QUEUE_LOSS_CHECK_SECONDS = env_float("KUBE_QUEUE_LOSS_CHECK_SECONDS", 1.0, minimum=0.05)

# --- The cluster ----------------------------------------------------------------------------------
# KUBECONFIG names a kubeconfig file; KUBE_IN_CLUSTER=true uses the pod's service account. With neither,
# the kubeconfig that `make run` writes for the simulator is used when it exists.
KUBECONFIG = env_str("KUBECONFIG", str(DEV_DIR / "kubeconfig") if (DEV_DIR / "kubeconfig").exists() else "")
KUBE_IN_CLUSTER = env_bool("KUBE_IN_CLUSTER", default=False)
# In a cluster: the directory where the kubelet mounts the ServiceAccount's token, ca.crt and namespace.
KUBE_SERVICEACCOUNT_DIR = env_str("KUBE_SERVICEACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")
# The namespace the control plane runs in (the chart sets its release namespace): grants on it, as on
# kube-* system namespaces, need a superuser's explicit confirmation (access/sensitive.py).
ARGOML_NAMESPACE = env_str("ARGOML_NAMESPACE", "argoml")
KUBE_WRITE_QPS = env_float("KUBE_WRITE_QPS", ratelimit.DEFAULT_WRITE_QPS, minimum=0.1)
KUBE_WRITE_BURST = env_int("KUBE_WRITE_BURST", ratelimit.DEFAULT_WRITE_BURST, minimum=1)
KUBE_REQUEST_TIMEOUT_SECONDS = env_float("KUBE_REQUEST_TIMEOUT_SECONDS", 30.0, minimum=1.0)

# --- Controllers: watch loops and leader election (docs/controllers.md) -----------------------------
# A worker runs the watch loops when started with `--controllers` or when this is true.
KUBE_CONTROLLERS_ENABLED = env_bool("KUBE_CONTROLLERS_ENABLED", default=False)
KUBE_LEADER_ELECTION_NAMESPACE = env_str("KUBE_LEADER_ELECTION_NAMESPACE")  # empty: the pod's own namespace
KUBE_LEADER_ELECTION_LEASE_NAME = env_str("KUBE_LEADER_ELECTION_LEASE_NAME", "argoml-controllers")
KUBE_LEADER_ELECTION_LEASE_DURATION_SECONDS = env_float("KUBE_LEADER_ELECTION_LEASE_DURATION_SECONDS", 15.0)
KUBE_LEADER_ELECTION_RENEW_DEADLINE_SECONDS = env_float("KUBE_LEADER_ELECTION_RENEW_DEADLINE_SECONDS", 10.0)
KUBE_LEADER_ELECTION_RETRY_PERIOD_SECONDS = env_float("KUBE_LEADER_ELECTION_RETRY_PERIOD_SECONDS", 2.0)
KUBE_INFORMER_PAGE_SIZE = env_int("KUBE_INFORMER_PAGE_SIZE", 500, minimum=1)
KUBE_WATCH_TIMEOUT_SECONDS = env_int("KUBE_WATCH_TIMEOUT_SECONDS", 300, minimum=1)
KUBE_WATCH_SILENCE_TIMEOUT_SECONDS = env_float("KUBE_WATCH_SILENCE_TIMEOUT_SECONDS", 120.0, minimum=1.0)

# --- Pod security (access app, docs/security.md#pod-security) --------------------------------------
# The Pod Security Standards level of a namespace the admin has no policy for (privileged, baseline or
# restricted): what tenants' pod templates must meet there.
POD_SECURITY_DEFAULT_LEVEL = env_choice(
    "POD_SECURITY_DEFAULT_LEVEL", ("privileged", "baseline", "restricted"), "baseline"
)

# --- Training operator (jobs app, docs/jobs.md) ----------------------------------------------------
JOBS_CLUSTER_DOMAIN = env_str("JOBS_CLUSTER_DOMAIN")  # e.g. cluster.local: appended to replica addresses
JOBS_RECONCILE_PARALLEL_CALLS = env_int("JOBS_RECONCILE_PARALLEL_CALLS", 8, minimum=1)
# The operator's clock, a dotted path to a function returning an aware datetime (tests read the simulator's).
JOBS_CLOCK = env_str("JOBS_CLOCK", "django.utils.timezone.now")
# Gang scheduling (docs/jobs.md#gang-scheduling): none, volcano or scheduler-plugins. With one, every job
# gets a PodGroup of that scheduler and its pods are handed to it (JOBS_GANG_SCHEDULER_NAME, default
# `volcano` or `scheduler-plugins-scheduler`, unless a pod template names a scheduler).
JOBS_GANG_SCHEDULER = env_choice("JOBS_GANG_SCHEDULER", ("none", "volcano", "scheduler-plugins"), "none")
JOBS_GANG_SCHEDULER_NAME = env_str("JOBS_GANG_SCHEDULER_NAME")
# Also serve TFJob, MXJob and PyTorchJob as Kubeflow does, kubeflow.org/v1 (docs/jobs.md#kubeflow-v1): the
# kubeflow.org CRDs must be installed (`install_crds --kubeflow`, the chart's kubeflow.installCRDs).
JOBS_KUBEFLOW_V1 = env_bool("JOBS_KUBEFLOW_V1", False)
# Kubeflow Trainer v2's kinds (TrainJob, TrainingRuntime, ClusterTrainingRuntime, docs/trainer.md) are ours:
# their CRDs are installed by us (`install_crds --trainer`, the chart's trainer.installCRDs), so our
# webhooks validate them and our controller runs TrainJobs (without it, its informers would fail to list).
# Off beside Kubeflow Trainer's own controller and webhooks.
TRAINER_ENABLED = env_bool("TRAINER_ENABLED", False)

# --- Garbage collection (garbage app, docs/gc.md) --------------------------------------------------
# Finished workflow pods are kept this long after they finish; per-namespace overrides are in the admin.
GC_SUCCEEDED_RETENTION_SECONDS = env_int("GC_SUCCEEDED_RETENTION_SECONDS", 24 * 3600, minimum=0)
GC_FAILED_RETENTION_SECONDS = env_int("GC_FAILED_RETENTION_SECONDS", 7 * 24 * 3600, minimum=0)
# Comma-separated namespace names or shell patterns (team-*). Empty allow list: every namespace.
GC_NAMESPACES_ALLOW = env_list("GC_NAMESPACES_ALLOW")
GC_NAMESPACES_DENY = env_list("GC_NAMESPACES_DENY")
# One collection at a time: a Redis lock with this TTL, renewed while the run goes on.
GC_LOCK_TTL_SECONDS = env_int("GC_LOCK_TTL_SECONDS", 300, minimum=10)
GC_PAGE_SIZE = env_int("GC_PAGE_SIZE", 500, minimum=1)
# --- end of garbage collection ---------------------------------------------------------------------

# --- Admission webhooks (webhooks app, docs/webhooks.md) ---------------------------------------------
# The webhook listener's URLconf (admission endpoints and probes only); the web server never serves them.
WEBHOOK_URLCONF = "argoml_site.webhook_urls"
# A review body larger than this is refused with 413 before it is read (the apiserver's own cap is 3 MiB).
WEBHOOK_MAX_BODY_BYTES = env_int("WEBHOOK_MAX_BODY_BYTES", 3 * 1024 * 1024, minimum=1024)
# Each review's time; past it the answer follows the kind's failurePolicy (below the configurations' 5 s).
WEBHOOK_REVIEW_BUDGET_SECONDS = env_float("WEBHOOK_REVIEW_BUDGET_SECONDS", 3.0, minimum=0.01)
# --- end of admission webhooks ---------------------------------------------------------------------

# --- TrainJob progress (trainer app, KEP-2779, docs/trainer.md) --------------------------------------
# The webhook listener's base URL as pods reach it (https://<service>.<namespace>.svc:<port>). Set, every
# TrainJob's trainer containers get KUBEFLOW_TRAINER_SERVER_URL/_CA_CERT/_TOKEN; empty, nothing is injected.
TRAINER_STATUS_SERVER_URL = env_str("TRAINER_STATUS_SERVER_URL", "")
# The PEM of the CA that signed the listener's certificate (the webhook Secret's ca.crt, mounted): read at
# each reconcile, so a rotated CA reaches new pods; required with the URL.
TRAINER_STATUS_CA_CERT_PATH = env_str("TRAINER_STATUS_CA_CERT_PATH", "")
if TRAINER_STATUS_SERVER_URL and not TRAINER_STATUS_SERVER_URL.startswith("https://"):
    raise ImproperlyConfigured(
        f"TRAINER_STATUS_SERVER_URL={TRAINER_STATUS_SERVER_URL!r} must start with https://."
    )
if TRAINER_STATUS_SERVER_URL and not TRAINER_STATUS_CA_CERT_PATH:
    raise ImproperlyConfigured(
        "TRAINER_STATUS_SERVER_URL needs TRAINER_STATUS_CA_CERT_PATH (the CA pods trust)."
    )
# A report larger than this is refused with 413 unread (Trainer's server: 64 KiB).
TRAINER_STATUS_MAX_BODY_BYTES = env_int("TRAINER_STATUS_MAX_BODY_BYTES", 64 * 1024, minimum=1024)
# Per pod: at most this many reports per window, then 429 with Retry-After (Kubeflow's SDK sends one per 5 s).
TRAINER_STATUS_REPORTS_PER_WINDOW = env_int("TRAINER_STATUS_REPORTS_PER_WINDOW", 5, minimum=1)
TRAINER_STATUS_WINDOW_SECONDS = env_int("TRAINER_STATUS_WINDOW_SECONDS", 10, minimum=1)
# --- end of TrainJob progress ----------------------------------------------------------------------

# --- TensorBoard (tensorboard app, docs/tensorboard.md) ---------------------------------------------
TENSORBOARD_IMAGE = env_str("TENSORBOARD_IMAGE", "tensorflow/tensorflow:2.16.1")
# Our image, for the pod's artifact fetcher (init container and sync sidecar); the chart sets its own.
TENSORBOARD_FETCH_IMAGE = env_str("TENSORBOARD_FETCH_IMAGE", "argoml/argoml:latest")
# How often the pod of a source still running fetches its artifacts again.
TENSORBOARD_SYNC_SECONDS = env_int("TENSORBOARD_SYNC_SECONDS", 60, minimum=1)
TENSORBOARD_CPU_REQUEST = env_str("TENSORBOARD_CPU_REQUEST", "100m")
TENSORBOARD_MEMORY_REQUEST = env_str("TENSORBOARD_MEMORY_REQUEST", "256Mi")
TENSORBOARD_CPU_LIMIT = env_str("TENSORBOARD_CPU_LIMIT", "1")
TENSORBOARD_MEMORY_LIMIT = env_str("TENSORBOARD_MEMORY_LIMIT", "2Gi")
# An instance nobody opened for this long is deleted (spec.idleTimeout overrides it per instance).
TENSORBOARD_IDLE_TIMEOUT_SECONDS = env_int("TENSORBOARD_IDLE_TIMEOUT_SECONDS", 2 * 3600, minimum=60)
# Served under <prefix>/<namespace>/<name>/; users reach it at TENSORBOARD_BASE_URL + that path: the web's
# authorizing proxy, served only when a request's Host is this URL's, which must not be the dashboard's
# (docs/security.md, "The TensorBoard proxy"). With no base URL: the Service's in-cluster URL, no proxy.
TENSORBOARD_PATH_PREFIX = env_str("TENSORBOARD_PATH_PREFIX", "/tensorboards")
TENSORBOARD_BASE_URL = env_str("TENSORBOARD_BASE_URL", "")
# How long the pass the Open button gives for one TensorBoard lasts (a cookie of the TensorBoard origin,
# dashboard/tensorboardpass.py); then Open again. Revoked grants and deactivated users end it sooner.
TENSORBOARD_PASS_SECONDS = env_int("TENSORBOARD_PASS_SECONDS", 8 * 3600, minimum=60)
TENSORBOARD_CLUSTER_DOMAIN = env_str("TENSORBOARD_CLUSTER_DOMAIN", "cluster.local")
# Object-store credentials: this Secret (in the instance's namespace) unless the artifact names its own.
TENSORBOARD_S3_CREDENTIALS_SECRET = env_str("TENSORBOARD_S3_CREDENTIALS_SECRET", "tensorboard-s3")
TENSORBOARD_S3_ACCESS_KEY_KEY = env_str("TENSORBOARD_S3_ACCESS_KEY_KEY", "accesskey")
TENSORBOARD_S3_SECRET_KEY_KEY = env_str("TENSORBOARD_S3_SECRET_KEY_KEY", "secretkey")
# Argo's default artifact repository, for artifacts that record only a key.
TENSORBOARD_ARTIFACT_BUCKET = env_str("TENSORBOARD_ARTIFACT_BUCKET", "")
TENSORBOARD_ARTIFACT_ENDPOINT = env_str("TENSORBOARD_ARTIFACT_ENDPOINT", "")
TENSORBOARD_ARTIFACT_REGION = env_str("TENSORBOARD_ARTIFACT_REGION", "")
TENSORBOARD_ARTIFACT_INSECURE = env_bool("TENSORBOARD_ARTIFACT_INSECURE", default=False)
TENSORBOARD_ARTIFACT_GCS_BUCKET = env_str("TENSORBOARD_ARTIFACT_GCS_BUCKET", "")
TENSORBOARD_GCS_CREDENTIALS_SECRET = env_str("TENSORBOARD_GCS_CREDENTIALS_SECRET", "")
TENSORBOARD_GCS_CREDENTIALS_KEY = env_str("TENSORBOARD_GCS_CREDENTIALS_KEY", "key.json")
# The GCS JSON API the fetcher reads (empty: https://storage.googleapis.com), e.g. an emulator's address.
TENSORBOARD_GCS_ENDPOINT = env_str("TENSORBOARD_GCS_ENDPOINT", "")
# Paths users may open directly (s3://…, gs://…, pvc://<claim>/…; {namespace} is replaced), comma-separated.
TENSORBOARD_ALLOWED_LOGDIRS = env_list("TENSORBOARD_ALLOWED_LOGDIRS")
# Where training jobs write TensorBoard logs, e.g. s3://ml-logs/{namespace}/{name} (empty: not opened).
TENSORBOARD_JOB_LOGDIR = env_str("TENSORBOARD_JOB_LOGDIR", "")
# --- end of TensorBoard ----------------------------------------------------------------------------

# --- Auth, API and static files -------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/admin/login/"
# Sign-in lockout (web/signin.py): this many failed sign-ins for one username (or from one client
# address) within the window lock it for SIGNIN_LOCKOUT_SECONDS. 0 failures: no lockout.
SIGNIN_LOCKOUT_FAILURES = env_int("SIGNIN_LOCKOUT_FAILURES", 5, minimum=0)
SIGNIN_LOCKOUT_ADDRESS_FAILURES = env_int("SIGNIN_LOCKOUT_ADDRESS_FAILURES", 20, minimum=0)
SIGNIN_LOCKOUT_WINDOW_SECONDS = env_int("SIGNIN_LOCKOUT_WINDOW_SECONDS", 900, minimum=1)
SIGNIN_LOCKOUT_SECONDS = env_int("SIGNIN_LOCKOUT_SECONDS", 900, minimum=1)
# Behind a proxy every caller has the proxy's address: name the header it appends the client's to.
SIGNIN_CLIENT_ADDRESS_HEADER = env_str("SIGNIN_CLIENT_ADDRESS_HEADER")

# API throttling (web/throttling.py), DRF rates such as 100/minute; empty: no limit. The token
# endpoint has its own stricter rate per client address.
API_THROTTLE_ANON = env_str("API_THROTTLE_ANON", "60/minute")
API_THROTTLE_USER = env_str("API_THROTTLE_USER", "1200/minute")
API_THROTTLE_TOKEN = env_str("API_THROTTLE_TOKEN", "10/minute")

# The throttles count in Redis, so every web process shares one count.
# A Redis that hangs must not hold a request: the throttles let requests through when it does not answer.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "argoml:cache",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
}

# Bodies are bounded before they are read whole (web/bodies.py, docs/security.md "Body sizes").
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 2_621_440, minimum=0)
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 1_000_000, minimum=1024)
FILE_UPLOAD_HANDLERS = [
    "web.bodies.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

REST_FRAMEWORK = {
    "DEFAULT_PARSER_CLASSES": [
        "web.bodies.JSONParser",
        "web.bodies.YAMLParser",
        "web.bodies.FormParser",
        "web.bodies.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": [
        "web.throttling.AnonThrottle",
        "web.throttling.UserThrottle",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # No configured cluster is a 503 naming it, like an unreachable one (web.api.exception_handler).
    "EXCEPTION_HANDLER": "web.api.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Argo-ML API",
    "DESCRIPTION": "Distributed training jobs, hyperparameter sweeps, TensorBoards and GC on Kubernetes. "
    "[Back to the dashboard](/dashboard/) · [Admin](/admin/)",
    "VERSION": "v1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its Swagger UI are for signed-in users only: anonymous callers get health and sign-in.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "PREPROCESSING_HOOKS": ["argoml_site.schema.api_endpoints_only"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Request bodies get their own components, so `required`, `minLength` and `readOnly` say what a
    # request must carry (schemathesis checks that schema-valid requests are accepted).
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "web.openapi.add_error_responses",
        "web.openapi.require_bodies_of_every_shape",
        "web.openapi.close_marked_bodies",
    ],
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# --- HTTPS (docs/security.md) -----------------------------------------------------------------------
# HTTPS_ONLY=true says every browser reaches us over TLS (the pod's own certificate, or a proxy that
# terminates TLS and says so in SECURE_PROXY_SSL_HEADER): it turns on the redirect to https, HSTS and
# secure cookies, so `manage.py check --deploy` passes with no warnings. Each can be overridden.
HTTPS_ONLY = env_bool("HTTPS_ONLY", default=False)
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=HTTPS_ONLY or not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=HTTPS_ONLY)
# Probes and scrapes may speak plain HTTP to the pod; they carry no cookies and get nothing to protect.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS_ONLY else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS_ONLY)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=HTTPS_ONLY)


def _proxy_ssl_header(raw: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto` (the value meaning https is `https`) or `Header-Name: value`. Only set it when a
    proxy in front of every request overwrites that header: otherwise a client could claim https."""
    if not raw.strip():
        return None
    name, _, value = raw.partition(":")
    name = name.strip()
    if not name or not all(char.isalnum() or char == "-" for char in name):
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={raw!r} must be a header name (X-Forwarded-Proto), or 'name: value'."
        )
    return "HTTP_" + name.upper().replace("-", "_"), value.strip() or "https"


SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(env_str("SECURE_PROXY_SSL_HEADER"))

# Content-Security-Policy on every response (web/csp.py); CSP_ENABLED=false sends none. The Open
# button's redirect to a TensorBoard on another origin is a form's answer: form-action allows that origin.
CONTENT_SECURITY_POLICY = (
    csp.policy(form_targets=(TENSORBOARD_BASE_URL,)) if env_bool("CSP_ENABLED", default=True) else ""
)

# --- Logging --------------------------------------------------------------------------------------
LOG_LEVEL = env_choice("LOG_LEVEL", ("DEBUG", "INFO", "WARNING", "ERROR"), "INFO")
LOG_FORMAT = env_choice("LOG_FORMAT", ("text", "json"), "text" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    # Adds the controller and resource key of the reconcile or watch handler running (kube/logging.py).
    "filters": {"kube_context": {"()": "kube.logging.ContextFilter", "text": LOG_FORMAT == "text"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["kube_context"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
