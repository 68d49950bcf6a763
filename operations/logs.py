"""An operation's log: append-only lines numbered by ``seq`` (1, 2, …) and pushed live to ``operation.<id>``.

Any writer may append (the engine, a service cancelling the operation); ``seq`` is allocated as the next number
after the highest stored one by the INSERT itself (one statement: ``INSERT … SELECT MAX(seq) + 1 … RETURNING``), and
a collision with a concurrent writer (the unique ``(operation, seq)`` constraint) is retried, so numbers never
repeat and never leave gaps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config.realtime import publish_on_commit
from operations.models import LogLevel, OperationLog

_ATTEMPTS = 8
_COLUMNS = ("operation_id", "seq", "phase", "level", "message", "created_at")


def _insert_sql() -> str:
    table = connection.ops.quote_name(OperationLog._meta.db_table)
    column = {name: connection.ops.quote_name(name) for name in _COLUMNS}  # no field renames its column
    return (f"INSERT INTO {table} ({', '.join(column[name] for name in _COLUMNS)}) "
            f"SELECT %s, COALESCE(MAX({column['seq']}), 0) + 1, %s, %s, %s, %s FROM {table} "
            f"WHERE {column['operation_id']} = %s RETURNING {connection.ops.quote_name('id')}, {column['seq']}")


def _insert_many_sql(count: int) -> str:
    """:func:`_insert_sql` for ``count`` lines at once: each gets the highest stored ``seq`` plus its place (the
    columns of a ``VALUES`` list are ``column1``… in PostgreSQL and SQLite alike)."""
    table = connection.ops.quote_name(OperationLog._meta.db_table)
    column = {name: connection.ops.quote_name(name) for name in _COLUMNS}
    values = ", ".join(["(%s, %s, %s, %s)"] * count)
    return (f"INSERT INTO {table} ({', '.join(column[name] for name in _COLUMNS)}) "
            f"SELECT %s, base.last + lines.column1, lines.column2, lines.column3, lines.column4, %s "
            f"FROM (SELECT COALESCE(MAX({column['seq']}), 0) AS last FROM {table} "
            f"WHERE {column['operation_id']} = %s) AS base, (VALUES {values}) AS lines "
            f"RETURNING {connection.ops.quote_name('id')}, {column['seq']}")


def append(operation_id: int, message: str, *, phase: str = "", level: str = LogLevel.INFO) -> OperationLog:
    """Store one line and publish it as ``operation.log``."""
    now = timezone.now()
    stored_now = connection.ops.adapt_datetimefield_value(now)
    for _ in range(_ATTEMPTS):
        # inside a transaction, a savepoint keeps a collision from breaking it; outside, the statement is atomic
        guard = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
        try:
            with guard, connection.cursor() as cursor:
                cursor.execute(_insert_sql(), [operation_id, phase, level, message, stored_now, operation_id])
                pk, seq = cursor.fetchone()
        except IntegrityError:
            continue
        line = OperationLog.from_db(connection.alias, ["id", *_COLUMNS],
                                    [pk, operation_id, seq, phase, level, message, now])
        publish_on_commit(f"operation.{operation_id}", "operation.log", line_payload(line))
        return line
    raise RuntimeError(f"could not allocate a log sequence number for operation {operation_id}")


def append_many(operation_id: int, lines: Sequence[tuple[str, str]], *,
                level: str = LogLevel.INFO) -> list[OperationLog]:
    """Store ``lines`` (``(message, phase)`` pairs, in order) with consecutive ``seq`` numbers in one statement and
    publish each as ``operation.log``; the same guarantees as :func:`append`."""
    now = timezone.now()
    stored_now = connection.ops.adapt_datetimefield_value(now)
    parameters = [operation_id, stored_now, operation_id]
    for place, (message, phase) in enumerate(lines, start=1):
        parameters += [place, phase, level, message]
    for _ in range(_ATTEMPTS):
        guard = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
        try:
            with guard, connection.cursor() as cursor:
                cursor.execute(_insert_many_sql(len(lines)), parameters)
                stored = sorted(cursor.fetchall(), key=lambda row: row[1])
        except IntegrityError:
            continue
        written = [OperationLog.from_db(connection.alias, ["id", *_COLUMNS],
                                        [pk, operation_id, seq, phase, level, message, now])
                   for (pk, seq), (message, phase) in zip(stored, lines, strict=True)]
        for line in written:
            publish_on_commit(f"operation.{operation_id}", "operation.log", line_payload(line))
        return written
    raise RuntimeError(f"could not allocate log sequence numbers for operation {operation_id}")


def line_payload(line: OperationLog) -> dict[str, Any]:
    return {"seq": line.seq, "phase": line.phase, "level": line.level, "message": line.message,
            "created_at": line.created_at.isoformat()}
