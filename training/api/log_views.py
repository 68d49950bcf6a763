"""A training job's stored log over REST: pages by ``seq`` (filter by rank and time, or the tail), and the whole log
as a text download, streamed in chunks."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from training.actions import LOGS
from training.api import log_serializers as s
from training.logs import store
from training.logs.jobs import job_for

TAGS = ["training"]


def _query(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class TrainingJobLogView(APIView):
    @extend_schema(operation_id="training_job_logs", parameters=[s.LogQuerySerializer],
                   responses={200: s.LogPageSerializer}, tags=TAGS)
    def get(self, request, job_id: int):
        """A training job's log lines (every rank, in the order they were stored), oldest first: the page after
        `after_seq`, or with `tail` the last lines; filter by `rank` and by `since` (an RFC 3339 instant). Read on
        with `after_seq` = `next_seq` until `complete` is true and `next_seq` = `last_seq`."""
        job = job_for(request.user, job_id, LOGS)
        query = _query(s.LogQuerySerializer, request)
        filters = {"rank": query.get("rank"), "since": query.get("since")}
        if query.get("tail"):
            rows = store.tail(job.pk, query["tail"], **filters)
        else:
            rows = store.lines_after(job.pk, query["after_seq"], limit=query["limit"], **filters)
        next_seq = rows[-1].seq if rows else (job.last_seq if query.get("tail") else query["after_seq"])
        return Response({"lines": [store.payload(row) for row in rows], "next_seq": next_seq,
                         "last_seq": job.last_seq, "complete": job.logs_complete})


class JsonErrorsAnyAccept(BaseContentNegotiation):
    """The download answers ``text/plain`` whatever the client accepts, and its errors JSON like every endpoint."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def download_lines(job_id: int, rank: int | None):
    """``[rank 3] 2026-01-02T03:04:05.123456Z text`` lines, read from the store a chunk at a time."""
    buffer: list[str] = []
    for line in store.iterate(job_id, rank=rank):
        buffer.append(f"[rank {line.rank}] {store.iso(line.at)} {line.text}\n")
        if len(buffer) >= 1000:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)


class TrainingJobLogDownloadView(APIView):
    content_negotiation_class = JsonErrorsAnyAccept

    @extend_schema(operation_id="training_job_logs_download", parameters=[s.DownloadQuerySerializer],
                   responses={(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="The log as text.")},
                   tags=TAGS)
    def get(self, request, job_id: int):
        """The whole log of a training job (or of one `rank`) as a text attachment, one line per log line:
        `[rank R] <RFC 3339 time> <text>`, in `seq` order."""
        job = job_for(request.user, job_id, LOGS)
        rank = _query(s.DownloadQuerySerializer, request).get("rank")
        response = StreamingHttpResponse(download_lines(job.pk, rank), content_type="text/plain; charset=utf-8")
        suffix = f"-rank{rank}" if rank is not None else ""
        response["Content-Disposition"] = f'attachment; filename="{job.name}{suffix}.log"'
        return response
