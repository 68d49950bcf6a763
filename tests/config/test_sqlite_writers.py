"""On the embedded SQLite default, concurrent writers wait for each other instead of failing with ``database is
locked``: WAL, a busy timeout of several seconds and ``BEGIN IMMEDIATE`` transactions (``config/settings.py``) — on
the product's database file and on the test suite's, which is a file too (an in-memory shared-cache database locks
whole tables and ignores the busy timeout)."""

from __future__ import annotations

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
