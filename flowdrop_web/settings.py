"""Settings for FlowDrop Web: one file, driven by environment variables.

SQLite is the embedded default; set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/flowdrop)
to run on PostgreSQL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.utils.csp import CSP

# Lets typed generics such as ModelAdmin[Conversation] work at run time.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").lower() in {"1", "true", "yes", "on"}


DEBUG = _env_flag("FLOWDROP_DEBUG")
# A development key: FlowDrop Web is a local tool bound to 127.0.0.1 by `make run`.
# Set FLOWDROP_SECRET_KEY anywhere it is reachable by others: with debug off,
# `check --deploy` (and so `make serve`) refuses to go on without it (buffers/checks.py).
SECRET_KEY = os.environ.get(
    "FLOWDROP_SECRET_KEY", "django-insecure-flowdrop-web-local-development-key-0123456789"
)


def _env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated variable's items, spaces around each left out."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


ALLOWED_HOSTS = _env_list("FLOWDROP_ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = _env_list("FLOWDROP_CSRF_TRUSTED_ORIGINS")

# Behind a TLS proxy (README, "Running it for a team"): FLOWDROP_HTTPS=1 redirects plain
# HTTP, sends cookies only over HTTPS, and asks browsers to keep to HTTPS for a year (HSTS,
# subdomains included). Whether a request came over HTTPS is gunicorn's to say: it believes
# X-Forwarded-Proto only from the proxy's address (make serve's FLOWDROP_PROXY_IPS, its
# --forwarded-allow-ips); Django's SECURE_PROXY_SSL_HEADER would believe it from anyone.
if _env_flag("FLOWDROP_HTTPS"):
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("FLOWDROP_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = _env_flag("FLOWDROP_HSTS_PRELOAD", default=True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "ninja",
    "buffers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "buffers.middleware.RefuseUnstorableQuery",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "buffers.middleware.InspectorLoginRequired",
    "buffers.idempotency.ExactlyOnce",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "buffers.api.json_method_not_allowed",
]

ROOT_URLCONF = "flowdrop_web.urls"
WSGI_APPLICATION = "flowdrop_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite takes the write lock at BEGIN (IMMEDIATE), so appends to a buffer queue on it;
# FLOWDROP_BUFFER_LOCK_WAIT bounds that wait (and the row-lock wait on PostgreSQL): MEM-12.
FLOWDROP_BUFFER_LOCK_WAIT = float(os.environ.get("FLOWDROP_BUFFER_LOCK_WAIT", "5"))

# How long a write waits for another one in flight with its Idempotency-Key, before a 409.
FLOWDROP_IDEMPOTENCY_WAIT = float(os.environ.get("FLOWDROP_IDEMPOTENCY_WAIT", "10"))

# Buffers are stored in blocks of about this many messages (buffers/models.py): an insert
# mid-buffer rewrites at most one block's rows and the starts of the blocks after it.
FLOWDROP_BUFFER_BLOCK_SIZE = int(os.environ.get("FLOWDROP_BUFFER_BLOCK_SIZE", "512"))

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}", conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": FLOWDROP_BUFFER_LOCK_WAIT,
        # mmap_size: the first GiB of the file is read through memory mapping, not a read()
        # per page into each connection's small page cache (and a connection lasts one
        # request): the list's search over 1,000,000 messages, 49 -> 42 ms. (The cost, as
        # SQLite documents it: an I/O error, or the file cut short by anything but SQLite,
        # such as a copy over the live file, ends the process with SIGBUS, not an error.)
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size=1073741824;"
        ),
    }
    # A file, not the in-memory default, so that threads and the live server used by
    # the tests share one database the way the real server does (one file per test run).
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / f".test-db-{os.getpid()}.sqlite3")}
else:
    # A PostgreSQL connection is kept by its worker between requests (FLOWDROP_DB_CONN_MAX_AGE
    # seconds; 0 opens one per request): a new one per request doubled the server's CPU per
    # append in benchmarks/load.py. Checked before reuse, so a restarted server is no error.
    # Not by the development server (make run): each of its requests has a thread of its
    # own, which would leave its connection open when it ends, until PostgreSQL refused more.
    kept = "0" if sys.argv[1:2] in (["runserver"], ["testserver"]) else "60"
    DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("FLOWDROP_DB_CONN_MAX_AGE", kept))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # No JIT: it compiles any query the planner costs above a threshold (~30 ms for a
    # search over a few rows whose estimate is high); a web app's queries are short.
    options = DATABASES["default"].setdefault("OPTIONS", {})
    options["options"] = f"{options.get('options', '')} -c jit=off".strip()
    # A statement a connection has run five times is prepared on the server (psycopg's
    # server-side binding), so PostgreSQL no longer parses it on every run. It still plans
    # each run for its parameters (force_custom_plan): the one plan PostgreSQL would keep
    # instead made the list filtered to unanswered calls 7x slower at 100,000
    # conversations. A write's transaction takes that one plan for its statements, which
    # find rows by key and position (its first statement says so: the buffer lock's in
    # services/locking.py, a keyed request's claim in idempotency.py); a keyed
    # append's CPU in PostgreSQL 2.8 -> 1.7 ms under benchmarks/load.py. A pooler in
    # transaction mode that does not keep prepared statements (PgBouncer without
    # max_prepared_statements) needs FLOWDROP_DB_PREPARED=0.
    if _env_flag("FLOWDROP_DB_PREPARED", default=True):
        options.setdefault("server_side_binding", True)
        options.setdefault("prepare_threshold", 5)
        options["options"] += " -c plan_cache_mode=force_custom_plan"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The largest request body accepted (the API answers 400 past it): room for a transcript
# of about 200,000 messages.
DATA_UPLOAD_MAX_MEMORY_SIZE = 32 * 1024 * 1024

# The largest OTLP trace request taken, as sent and once inflated (gzip).
FLOWDROP_OTLP_MAX_BYTES = int(os.environ.get("FLOWDROP_OTLP_MAX_BYTES", str(32 * 1024 * 1024)))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "buffers:conversation_list"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the app and project static folders: no collectstatic step to forget.
# No STATIC_ROOT either: whitenoise warns about a missing one on every start, and the
# test suite turns warnings into errors.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Transcript content is untrusted. Scripts only from us, with a per-response nonce;
# no inline style, no eval, no plugins, no framing.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "buffers": {"handlers": ["console"], "level": "INFO"},
        # With DEBUG off, Django would only mail a server error's traceback: print it.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}
