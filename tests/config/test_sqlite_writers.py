"""On the embedded SQLite default, concurrent writers wait for each other instead of failing with ``database is
locked``: WAL, a busy timeout of several seconds and ``BEGIN IMMEDIATE`` transactions (``config/settings.py``) — on
the product's database file and on the test suite's, which is a file too (an in-memory shared-cache database locks
whole tables and ignores the busy timeout)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time

import pytest
from django.conf import settings
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper

pytestmark = pytest.mark.skipif(settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3",
                                reason="the embedded SQLite default only")

HOLD_SECONDS = 0.5


@pytest.fixture
def own_databases(django_db_blocker):
    """Connections of the test's own (not the suite's test database), which pytest-django blocks by default."""
    with django_db_blocker.unblock():
        yield


def database_on(path) -> DatabaseWrapper:
    """A connection to the SQLite file ``path`` with the product's options."""
    return DatabaseWrapper({**settings.DATABASES["default"], "NAME": str(path)}, alias="writers")


def test_the_options_are_wal_and_a_busy_timeout_of_several_seconds(tmp_path, own_databases):
    database = database_on(tmp_path / "db.sqlite3")
    with database.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 5000
    assert database.transaction_mode == "IMMEDIATE"
    database.close()


def test_two_writers_at_once_both_commit(tmp_path, own_databases):
    path = tmp_path / "db.sqlite3"
    setup = database_on(path)
    with setup.cursor() as cursor:
        cursor.execute("CREATE TABLE line (writer TEXT, n INTEGER)")
    setup.close()
    errors: list[BaseException] = []
    first_holds_the_lock = threading.Event()

    def write(name: str, *, hold: bool) -> None:
        database = database_on(path)
        try:
            with database.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM line")  # a read first: the upgrade to a write must wait too
            database.set_autocommit(False)
            with database.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM line")
                for n in range(3):
                    cursor.execute("INSERT INTO line VALUES (%s, %s)", [name, n])
                if hold:
                    first_holds_the_lock.set()
                    time.sleep(HOLD_SECONDS)
            database.commit()
        except BaseException as error:  # the test reports whatever a writer raised
            errors.append(error)
        finally:
            first_holds_the_lock.set()
            database.close()

    first = threading.Thread(target=write, args=("first",), kwargs={"hold": True})
    first.start()
    first_holds_the_lock.wait(5)
    second = threading.Thread(target=write, args=("second",), kwargs={"hold": False})
    started = time.monotonic()
    second.start()
    first.join()
    second.join()
    assert errors == []
    assert time.monotonic() - started >= HOLD_SECONDS / 2  # the second writer waited for the first
    check = database_on(path)
    with check.cursor() as cursor:
        cursor.execute("SELECT writer, count(*) FROM line GROUP BY writer ORDER BY writer")
        assert cursor.fetchall() == [("first", 3), ("second", 3)]
    check.close()


@pytest.mark.django_db(transaction=True)
def test_the_test_suites_database_is_a_file_with_the_same_options():
    """So that tests with threads (log followers, the operation engine) meet the product's locking, not the table
    locks of a shared-cache in-memory database that answer ``database table is locked`` at once."""
    assert "mode=memory" not in str(connection.settings_dict["NAME"])
    assert str(connection.settings_dict["NAME"]) != ":memory:"
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"


@contextlib.contextmanager
def locked_database():
    """The test database held by another writer (``BEGIN IMMEDIATE`` on a connection of its own) while the test's
    connection waits only 50 ms for it: the rare ``database is locked`` that outlasts the busy timeout, at once."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout = 50")
    holder = sqlite3.connect(str(connection.settings_dict["NAME"]), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(settings.DATABASES['default']['OPTIONS']['timeout'] * 1000)}")


@pytest.mark.django_db(transaction=True)
def test_a_locked_database_is_503_database_busy_with_retry_after_on_rest_mcp_and_portal(cast, token_for):
    from django.test import Client

    from accounts.models import Team
    from mcp_server.testing import call_tool

    secret = token_for(cast.admin)
    portal = Client(raise_request_exception=False)
    portal.force_login(cast.admin)
    teams = Team.objects.count()
    with locked_database():
        rest = Client(raise_request_exception=False).post(
            "/api/v1/teams", {"name": "Busy", "slug": "busy"}, content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {secret}")
        is_error, body = call_tool(secret, "create_team", {"name": "Busy", "slug": "busy"})
        page = portal.post("/me/team/", {"current_team": ""})
    assert (rest.status_code, rest.json()["code"], rest["Retry-After"]) == (503, "database_busy", "2")
    assert is_error and body["code"] == "database_busy"
    assert page.status_code == 503 and page["Retry-After"] == "2"
    assert 'data-error-code="database_busy"' in page.content.decode()
    assert Team.objects.count() == teams
    cast.admin.refresh_from_db()
    assert cast.admin.current_team_id == cast.team.pk
