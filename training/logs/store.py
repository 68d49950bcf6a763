"""The log-line store: every line of a job once, numbered by a per-job ``seq`` (1, 2, … without gaps).

:func:`append` allocates consecutive numbers under a row lock of the job (``TrainingJob.last_seq`` is the counter)
and writes a batch at once (``COPY`` on PostgreSQL, ``bulk_create`` elsewhere), with the batch's metric points, in
one transaction. Only ``last_seq``/``logs_complete`` are written on the job row (``update``, never ``save``: the
job's operation owns the rest). Readers page by ``seq``. :func:`purge` is the retention: lines of jobs finished
more than ``INSTANTSTART_TRAINING_LOG_RETENTION_DAYS`` ago are deleted, in chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max, QuerySet
from django.utils import timezone

from training.logs import metrics
from training.logs.kubelet import PodLine, to_micros
from training.metrics import summarize_logs
from training.models import TERMINAL_JOB_STATES, TrainingJob, TrainingLogLine

PURGE_CHUNK = 5000


def append(job_id: int, lines: Sequence[PodLine], *, summary: metrics.Summary | None = None) -> list[dict]:
    """Store ``lines`` (in order) with the next ``seq`` numbers, with their metric points; returns them as
    :func:`payload` dicts.

    On PostgreSQL the rows go in with one ``COPY … FROM STDIN`` (no per-value quoting, no model instances: the
    follower's hot path); elsewhere with one ``bulk_create``. The follower passes the job's ``summary``, which the
    counter's own UPDATE then writes when it changed (four statements a batch); without it the summary is read and
    recomputed from the stored points."""
    if not lines:
        return []
    with transaction.atomic():
        last = TrainingJob.objects.select_for_update().filter(pk=job_id).values_list("last_seq", flat=True).get()
        rows = [(job_id, last + index, line.pod, line.rank, line.at, line.text)
                for index, line in enumerate(lines, start=1)]
        if connection.vendor == "postgresql":
            _copy(rows)
        else:
            TrainingLogLine.objects.bulk_create(
                [TrainingLogLine(job_id=job, seq=seq, pod=pod, rank=rank, at=at, text=text)
                 for job, seq, pod, rank, at, text in rows])
        points = metrics.points(job_id, lines)
        metrics.upsert(points)
        changes: dict = {"last_seq": F("last_seq") + len(rows)}
        if summary is None:
            if points:
                summarize_logs(TrainingJob.objects.get(pk=job_id))
        elif (changed := summary.changed(points)) is not None:
            changes |= {"metrics": changed, "updated_at": timezone.now()}
        TrainingJob.objects.filter(pk=job_id).update(**changes)
    return [{"seq": seq, "rank": rank, "pod": pod, "at": iso(at), "text": text}
            for _job, seq, pod, rank, at, text in rows]


_COPY_COLUMNS = ("job_id", "seq", "pod", "rank", "at", "text")


def _copy(rows: list[tuple]) -> None:
    table = connection.ops.quote_name(TrainingLogLine._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in _COPY_COLUMNS)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def mark_complete(job_id: int) -> int:
    """Record that every rank was read to its end; returns the final ``last_seq``."""
    TrainingJob.objects.filter(pk=job_id).update(logs_complete=True)
    return TrainingJob.objects.values_list("last_seq", flat=True).get(pk=job_id)


def payload(line: TrainingLogLine) -> dict:
    """A line as every face shows it: ``{"seq", "rank", "pod", "at", "text"}`` (``at`` RFC 3339, UTC)."""
    return {"seq": line.seq, "rank": line.rank, "pod": line.pod, "at": iso(line.at), "text": line.text}


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def filtered(job_id: int, *, rank: int | None = None, since: datetime | None = None) -> QuerySet[TrainingLogLine]:
    lines = TrainingLogLine.objects.filter(job_id=job_id)
    if rank is not None:
        lines = lines.filter(rank=rank)
    if since is not None:
        lines = lines.filter(at__gte=since)
    return lines


def lines_after(job_id: int, seq: int, *, rank: int | None = None, since: datetime | None = None,
                limit: int = 500) -> list[TrainingLogLine]:
    """Up to ``limit`` lines with ``seq`` > ``seq``, oldest first."""
    return list(filtered(job_id, rank=rank, since=since).filter(seq__gt=seq).order_by("seq")[:limit])


def payloads_after(job_id: int, seq: int, *, rank: int | None = None, limit: int = 500) -> list[dict]:
    """Up to ``limit`` lines after ``seq`` as :func:`payload` dicts, read as plain values (no model instances: the
    WebSocket replay's hot path)."""
    rows = (filtered(job_id, rank=rank).filter(seq__gt=seq).order_by("seq")
            .values_list("seq", "rank", "pod", "at", "text")[:limit])
    return [{"seq": number, "rank": rank_, "pod": pod, "at": iso(at), "text": text}
            for number, rank_, pod, at, text in rows]


#: One line as the JSON object :func:`payload` gives, written by PostgreSQL (``to_json`` quotes the strings).
_LINE_JSON = ("""'{"seq": ' || seq || ', "rank": ' || rank || ', "pod": ' || to_json(pod)::text || ', "at": "' """
              """|| to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '", "text": ' """
              """|| to_json(text)::text || '}'""")


def lines_frame_after(job_id: int, seq: int, *, rank: int | None = None, limit: int = 500) -> tuple[str, int, int]:
    """The WebSocket ``lines`` frame (``{"type": "lines", "lines": [...]}``, JSON text) of up to ``limit`` lines
    after ``seq`` (of ``rank`` only, when set), the last ``seq`` it holds (0: none) and how many lines it holds.

    On PostgreSQL the database writes the JSON in the query, so no row becomes Python values (many viewers replaying
    a busy job's backlog at once made the timestamps' parsing and formatting the web process's main cost); elsewhere
    the frame is :func:`payloads_after` encoded. The lines parse to exactly :func:`payloads_after`'s."""
    if connection.vendor != "postgresql":
        lines = payloads_after(job_id, seq, rank=rank, limit=limit)
        return json.dumps({"type": "lines", "lines": lines}), lines[-1]["seq"] if lines else 0, len(lines)
    table = connection.ops.quote_name(TrainingLogLine._meta.db_table)
    by_rank = " AND rank = %s" if rank is not None else ""
    parameters = [job_id, seq, *([rank] if rank is not None else []), limit]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(string_agg({_LINE_JSON}, ', ' ORDER BY seq), ''), coalesce(max(seq), 0), "
                       f"count(*) FROM (SELECT seq, rank, pod, at, text FROM {table} WHERE job_id = %s AND seq > %s"
                       f"{by_rank} ORDER BY seq LIMIT %s) AS page", parameters)
        lines, last_seq, count = cursor.fetchone()
    return f'{{"type": "lines", "lines": [{lines}]}}', last_seq, count


def tail(job_id: int, count: int, *, rank: int | None = None, since: datetime | None = None) -> list[TrainingLogLine]:
    """The last ``count`` lines, oldest first."""
    newest = list(filtered(job_id, rank=rank, since=since).order_by("-seq")[:count])
    return newest[::-1]


def iterate(job_id: int, *, rank: int | None = None, chunk: int = 2000) -> Iterator[TrainingLogLine]:
    """Every line, oldest first, read ``chunk`` rows at a time (a whole log is never in memory)."""
    seq = 0
    while True:
        rows = lines_after(job_id, seq, rank=rank, limit=chunk)
        yield from rows
        if len(rows) < chunk:
            return
        seq = rows[-1].seq


def watermarks(job_id: int) -> dict[str, tuple[int, list[str]]]:
    """Per pod: the newest stored timestamp (microseconds) and the texts stored at it — where a follower resumes."""
    found: dict[str, tuple[int, list[str]]] = {}
    newest = (TrainingLogLine.objects.filter(job_id=job_id).values("pod").order_by("pod")
              .annotate(last=Max("at")))
    for row in newest:
        texts = list(TrainingLogLine.objects.filter(job_id=job_id, pod=row["pod"], at=row["last"])
                     .values_list("text", flat=True))
        found[row["pod"]] = (to_micros(row["last"]), texts)
    return found


def purge(older_than: timedelta | None = None, *, chunk: int = PURGE_CHUNK) -> int:
    """Delete the lines of jobs that finished more than ``older_than`` ago (default: the retention setting), at
    most ``chunk`` rows per statement; returns how many were deleted."""
    if older_than is None:
        older_than = timedelta(days=settings.INSTANTSTART_TRAINING_LOG_RETENTION_DAYS)
    cutoff = timezone.now() - older_than
    jobs = TrainingJob.objects.filter(state__in=TERMINAL_JOB_STATES, finished_at__lt=cutoff).values("pk")
    deleted = 0
    while True:
        ids = list(TrainingLogLine.objects.filter(job__in=jobs).values_list("pk", flat=True)[:chunk])
        if not ids:
            return deleted
        deleted += TrainingLogLine.objects.filter(pk__in=ids).delete()[0]
