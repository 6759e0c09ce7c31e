"""Serving it for a team: `check --deploy` is clean with the documented variables, refuses
without a secret key, and gunicorn serves the app and its static files behind a TLS proxy."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MANAGE = [sys.executable, str(ROOT / "manage.py")]


def deployment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment README's "Running it for a team" documents."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("FLOWDROP_", "DJANGO_")) and key != "DATABASE_URL"
    }
    env |= {
        "FLOWDROP_SECRET_KEY": secrets.token_urlsafe(50),
        "FLOWDROP_ALLOWED_HOSTS": "flowdrop.example.org,127.0.0.1",
        "FLOWDROP_CSRF_TRUSTED_ORIGINS": "https://flowdrop.example.org",
        "FLOWDROP_HTTPS": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
    }
    return env | extra


def check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MANAGE, "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_deploy_reports_nothing_with_the_documented_variables(tmp_path: Path) -> None:
    done = check(deployment(tmp_path))

    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_without_a_secret_key_the_deployment_check_refuses_naming_the_variable(
    tmp_path: Path,
) -> None:
    env = deployment(tmp_path)
    del env["FLOWDROP_SECRET_KEY"]

    done = check(env)

    assert done.returncode != 0
    assert "flowdrop.E001" in done.stderr
    assert "FLOWDROP_SECRET_KEY is not set" in done.stderr


def test_without_https_the_check_names_what_a_public_deployment_lacks(tmp_path: Path) -> None:
    done = check(deployment(tmp_path, FLOWDROP_HTTPS="0"))

    assert done.returncode != 0
    for warning in ("W004", "W008", "W012", "W016"):
        assert warning in done.stderr


@contextmanager
def serving(tmp_path: Path, *options: str) -> Iterator[str]:
    """gunicorn as `make serve` starts it, with these options, on a free port."""
    env = deployment(tmp_path)
    subprocess.run([*MANAGE, "migrate", "--verbosity", "0"], env=env, check=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "flowdrop_web.wsgi",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
            "--access-logfile",
            "-",
            *options,
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path, "--forwarded-allow-ips", "127.0.0.1,::1") as url:  # make serve's
        yield url


def get(url: str, proto: str = "https") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"X-Forwarded-Proto": proto})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_gunicorn_serves_the_pages_and_static_files_behind_a_tls_proxy(gunicorn: str) -> None:
    url = gunicorn

    status, headers, body = get(f"{url}/accounts/login/")
    assert status == 200
    assert b"Sign in" in body
    assert headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "Secure" in headers["Set-Cookie"]

    status, headers, _ = get(f"{url}/static/buffers/app.css")
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")

    status, headers, _ = get(f"{url}/accounts/login/", proto="http")
    assert status == 301
    assert headers["Location"].startswith("https://")


def test_only_the_proxy_is_believed_when_it_says_the_request_came_over_https(
    tmp_path: Path,
) -> None:
    """The proxy's address (FLOWDROP_PROXY_IPS, gunicorn's --forwarded-allow-ips) is who
    may say a request came over HTTPS: a client reaching the server past its proxy, saying
    so itself, is sent to HTTPS like any plain request."""
    with serving(tmp_path, "--forwarded-allow-ips", "10.9.9.9") as url:
        status, headers, _ = get(f"{url}/accounts/login/", proto="https")

    assert status == 301
    assert headers["Location"].startswith("https://")


@pytest.mark.django_db
def test_postgresql_sessions_run_without_the_jit_compiler() -> None:
    """PostgreSQL's JIT compiles any query its planner costs above a threshold, ~30 ms for
    a search over a few rows whose estimate is high: for short web queries that is only
    cost, so the server's connections turn it off."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's JIT")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)


# A statement a connection runs again and again is prepared on the server (psycopg's
# server-side binding), so PostgreSQL parses it once for the connection (until a rollback,
# after which psycopg prepares again), not on every run; FLOWDROP_DB_PREPARED=0 turns it
# off for a pooler that cannot keep prepared statements.


def _prepared_statements() -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db
def test_postgresql_prepares_the_statements_appends_run_again_and_again() -> None:
    from django.db import connection

    from buffers import healing, services
    from tests.buffers import assistant, store, user

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's prepared statements")
    conversation = store([user("start")])
    assert not any("pg_advisory_xact_lock" in s for s in _prepared_statements())

    for number in range(6):
        for message in (assistant(f"call-{number}"), user(f"turn {number}")):
            services.append_messages(
                conversation_id=conversation.pk,
                messages=healing.parse_messages([message], appendable=True),
                via="tests",
            )

    assert any("pg_advisory_xact_lock" in s for s in _prepared_statements())
    conversation.refresh_from_db()
    assert conversation.message_count == 1 + 6 * 3  # each call, its healed result, the turn


@pytest.mark.django_db(transaction=True)
def test_reads_are_planned_for_their_parameters_and_buffer_writes_keep_one_plan() -> None:
    """PostgreSQL's one plan for a prepared statement suits a write's statements, keyed by
    conversation and position, and the reads of one conversation; a read filtered one way
    or another is planned for its parameters (the one plan made the list filtered to
    unanswered calls 7x slower at 100,000 conversations)."""
    from django.db import connection, transaction

    from buffers import idempotency
    from buffers.services.locking import with_buffer_lock
    from tests.buffers import acting_user, store, user

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's plan cache")
    conversation = store([user("start")])

    def plan_cache_mode(*_: object) -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW plan_cache_mode")
            mode: str = cursor.fetchone()[0]
            return mode

    assert plan_cache_mode() == "force_custom_plan"
    assert with_buffer_lock(conversation.pk, "tests", plan_cache_mode) == "auto"
    assert plan_cache_mode() == "force_custom_plan"
    with transaction.atomic():  # a keyed request's write begins with its key's claim
        assert idempotency._claim(acting_user(), "key", "fingerprint") is not None
        assert plan_cache_mode() == "auto"
    assert plan_cache_mode() == "force_custom_plan"


@pytest.mark.django_db
def test_flowdrop_db_prepared_0_leaves_statements_unprepared(tmp_path: Path) -> None:
    from django.db import connection

    from tests.databases import database_url

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's prepared statements")
    ask = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "with connection.cursor() as cursor:\n"
        "    for _ in range(8):\n"
        "        cursor.execute('SELECT %s::int + 1', [1])\n"
        "    cursor.execute('SELECT count(*) FROM pg_prepared_statements')\n"
        "    print(cursor.fetchone()[0])\n"
    )

    def prepared(**flag: str) -> str:
        env = deployment(tmp_path, DATABASE_URL=database_url(), **flag)
        env["DJANGO_SETTINGS_MODULE"] = "flowdrop_web.settings"
        run = subprocess.run(
            [sys.executable, "-c", ask], env=env, cwd=ROOT, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    assert prepared() == "1"  # by default
    assert prepared(FLOWDROP_DB_PREPARED="0") == "0"


# A worker keeps its PostgreSQL connection between requests (CONN_MAX_AGE), and checks it
# before a request uses it, so that a restarted server is no error.


def _gone(pid: int) -> bool:
    """Whether the server's backend ``pid`` has ended, asked over a connection of its own."""
    import psycopg
    from django.db import connection

    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        found = other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    return found is None


def _next_request() -> None:
    """What Django does between two requests of a worker (``close_old_connections``)."""
    from django.db import connection

    connection.close_if_unusable_or_obsolete()


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_ended_is_replaced_before_the_next_request_uses_it() -> None:
    import psycopg
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's connections are kept between requests")
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    for _ in range(100):  # the server ends it a moment later
        if _gone(pid):
            break
        time.sleep(0.02)
    _next_request()

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


# The development server (`make run`) serves each request in a thread of its own, which
# ends with it: a connection kept for the next request would be left open by every thread,
# until PostgreSQL refused more ("too many clients already", a 500 for each request).


def _now() -> datetime:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        now: datetime = cursor.fetchone()[0]
        return now


def _server_connections(since: datetime) -> int:
    """Connections to the test database opened since ``since`` by anyone else: the server's
    (another test's left behind are older)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND backend_start >= %s",
            [since],
        )
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_the_development_server_leaves_no_connection_open_after_its_requests(
    tmp_path: Path,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from buffers.models import ApiToken
    from tests.buffers import acting_user
    from tests.databases import database_url

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's connections")
    _, token = ApiToken.issue(acting_user(), "probe")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWDROP_")}
    env |= {"DATABASE_URL": database_url(), "FLOWDROP_DEBUG": "1"}
    started = _now()
    with (tmp_path / "runserver.log").open("w") as log:
        server = subprocess.Popen(
            [*MANAGE, "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:

        def listed(_: int) -> int:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/conversations",
                headers={"Authorization": f"Bearer {token}"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return int(response.status)

        for _ in range(300):  # until it listens
            try:
                listed(0)
                break
            except OSError:
                time.sleep(0.05)
        with ThreadPoolExecutor(8) as clients:
            statuses = list(clients.map(listed, range(40)))
        open_after = _server_connections(started)
        for _ in range(100):  # each closes as its request ends, a moment after the answer
            if not open_after:
                break
            time.sleep(0.05)
            open_after = _server_connections(started)
    finally:
        server.terminate()
        server.wait(timeout=15)

    assert statuses == [200] * 40
    assert open_after == 0


def test_the_host_and_origin_lists_may_have_spaces_after_their_commas(tmp_path: Path) -> None:
    """From the operator's hunt: "a.example.org, b.example.org" made every request for
    b.example.org a 400, and the deployment check said nothing."""
    env = deployment(
        tmp_path,
        FLOWDROP_ALLOWED_HOSTS="a.example.org, b.example.org ,",
        FLOWDROP_CSRF_TRUSTED_ORIGINS=" https://a.example.org, https://b.example.org",
    )
    shown = "from django.conf import settings as s; print(s.ALLOWED_HOSTS, s.CSRF_TRUSTED_ORIGINS)"

    done = subprocess.run(
        [*MANAGE, "shell", "-c", shown], env=env, capture_output=True, text=True, check=True
    )

    assert done.stdout.splitlines()[-1] == (
        "['a.example.org', 'b.example.org'] ['https://a.example.org', 'https://b.example.org']"
    )


def test_an_empty_host_list_fails_the_deployment_check(tmp_path: Path) -> None:
    done = check(deployment(tmp_path, FLOWDROP_ALLOWED_HOSTS=" "))

    assert done.returncode != 0
    assert "security.W020" in done.stderr
