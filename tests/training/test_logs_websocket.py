"""The live-log WebSocket ``ws/training-jobs/<id>/logs/`` through the real ASGI app and the Redis channel layer: replay
from a ``seq``, live batches without duplicates, the rank filter, the end frame, refusals (anonymous, other team,
bad query), and the gap marker a slow viewer gets instead of unbounded buffering."""

from __future__ import annotations

import json
import threading

import pytest
from channels.db import database_sync_to_async as in_thread
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.utils import timezone

from config.asgi import application
from tests import factories
from tests.accounts.test_websocket import session_cookie
from tests.websockets import refused_with
from training.consumers import FRAME_LINES
from training.logs import store
from training.logs.kubelet import PodLine, to_micros
from training.logs.publish import Publisher
from training.models import JobState, TrainingJob

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]


def make_job(team, state: str = JobState.RUNNING) -> TrainingJob:
    return factories.training_job(factories.cluster(team, "c"), state=state)


_clock = [to_micros(timezone.now())]


def lines(count: int, *, ranks: int = 2, prefix: str = "line") -> list[PodLine]:
    made = []
    for index in range(count):
        _clock[0] += 1
        rank = index % ranks
        made.append(PodLine(f"llama-pods-{rank}", rank, _clock[0], f"{prefix} {index}"))
    return made


def store_and_publish(job_id: int, *batches: list[PodLine], end: str | None = None) -> None:
    """What the follower does per batch (in a thread of its own, with its own event loop)."""
    publisher = Publisher(job_id)
    try:
        for batch in batches:
            publisher.batch(store.append(job_id, batch))
        if end:
            TrainingJob.objects.filter(pk=job_id).update(state=end)
            publisher.end(end, store.mark_complete(job_id))
    finally:
        publisher.close()
        connection.close()


def in_own_thread(job_id: int, *batches, end: str | None = None) -> None:
    thread = threading.Thread(target=store_and_publish, args=(job_id, *batches), kwargs={"end": end})
    thread.start()
    thread.join()


def stream(job_id: int, *, token: str | None = None, cookie: str | None = None, query: str = ""):
    headers = []
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if cookie:
        headers += [(b"cookie", cookie.encode()), (b"origin", b"http://localhost:3099")]
    return WebsocketCommunicator(application, f"/ws/training-jobs/{job_id}/logs/" + (f"?{query}" if query else ""),
                                 headers=headers)


async def opened(communicator) -> WebsocketCommunicator:
    connected, code = await communicator.connect()
    assert connected, code
    return communicator


async def frames_until_quiet(communicator, timeout: float = 0.3) -> list[dict]:
    frames = []
    while not await communicator.receive_nothing(timeout=timeout):
        output = await communicator.receive_output()
        if output["type"] == "websocket.close":
            frames.append({"type": "closed", "code": output.get("code")})
            break
        frames.append(json.loads(output["text"]))
    return frames


def seqs(frames: list[dict]) -> list[int]:
    return [line["seq"] for frame in frames if frame["type"] == "lines" for line in frame["lines"]]


async def test_replay_after_the_clients_seq_then_live_batches_without_duplicates(cast, token_for):
    job = await in_thread(make_job)(cast.team)
    await in_thread(store.append)(job.pk, lines(2 * FRAME_LINES + 203))
    token = await in_thread(token_for)(cast.viewer, read_only=True)
    communicator = await opened(stream(job.pk, token=token, query="after_seq=2"))

    replay = await frames_until_quiet(communicator)
    assert [len(frame["lines"]) for frame in replay] == [FRAME_LINES, FRAME_LINES, 201]
    assert seqs(replay) == list(range(3, 2 * FRAME_LINES + 204))
    first = replay[0]["lines"][0]
    assert set(first) == {"seq", "rank", "pod", "at", "text"}
    assert (first["rank"], first["pod"], first["text"]) == (0, "llama-pods-0", "line 2")
    assert first["at"].endswith("Z")

    await in_thread(in_own_thread)(job.pk, lines(3), lines(2))
    live = await frames_until_quiet(communicator)
    assert [frame["type"] for frame in live] == ["lines", "lines"]
    stored = 2 * FRAME_LINES + 203
    assert seqs(live) == list(range(stored + 1, stored + 6))
    await communicator.disconnect()


async def test_end_frame_after_every_line_then_close(cast, token_for):
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.operator)
    communicator = await opened(stream(job.pk, token=token))
    assert await communicator.receive_nothing(timeout=0.2)
    await in_thread(in_own_thread)(job.pk, lines(4), end=JobState.SUCCEEDED)
    frames = await frames_until_quiet(communicator)
    assert frames == [{"type": "lines", "lines": frames[0]["lines"]},
                      {"type": "end", "state": "succeeded", "last_seq": 4},
                      {"type": "closed", "code": 1000}]
    assert seqs(frames) == [1, 2, 3, 4]


async def test_a_finished_job_replays_and_ends_at_once(cast, token_for):
    job = await in_thread(make_job)(cast.team, JobState.FAILED)
    await in_thread(store.append)(job.pk, lines(7))
    await in_thread(store.mark_complete)(job.pk)
    token = await in_thread(token_for)(cast.viewer)
    frames = await frames_until_quiet(await opened(stream(job.pk, token=token, query="after_seq=5")))
    assert frames == [{"type": "lines", "lines": frames[0]["lines"]},
                      {"type": "end", "state": "failed", "last_seq": 7}, {"type": "closed", "code": 1000}]
    assert seqs(frames) == [6, 7]


async def test_the_rank_filter_sends_one_ranks_lines(cast, token_for):
    job = await in_thread(make_job)(cast.team)
    await in_thread(store.append)(job.pk, lines(6, ranks=3))
    token = await in_thread(token_for)(cast.viewer)
    communicator = await opened(stream(job.pk, token=token, query="rank=1"))
    replay = await frames_until_quiet(communicator)
    assert seqs(replay) == [2, 5]
    await in_thread(in_own_thread)(job.pk, lines(3, ranks=3))
    assert seqs(await frames_until_quiet(communicator)) == [8]
    await communicator.disconnect()


async def test_session_cookie_of_a_member_is_accepted(cast):
    job = await in_thread(make_job)(cast.team)
    cookie = await in_thread(session_cookie)(cast.viewer)
    communicator = await opened(stream(job.pk, cookie=cookie))
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from() == {"type": "pong"}
    await communicator.disconnect()


async def test_refusals(cast, token_for):
    job = await in_thread(make_job)(cast.team)
    outsider = await in_thread(token_for)(cast.outsider)
    viewer = await in_thread(token_for)(cast.viewer)
    assert await refused_with(stream(job.pk)) == 4401
    assert await refused_with(stream(job.pk, token="isk_forged")) == 4401
    assert await refused_with(stream(job.pk, token=outsider)) == 4404
    assert await refused_with(stream(999_999, token=outsider)) == 4404
    assert await refused_with(stream(999_999, token=viewer)) == 4404
    for query in ("after_seq=-1", "after_seq=x", "after_seq=1e3", "rank=a", "rank=-2"):
        assert await refused_with(stream(job.pk, token=viewer, query=query)) == 4400, query


async def test_a_slow_viewer_gets_a_gap_marker_and_reads_the_gap_over_rest(cast, token_for, api, monkeypatch):
    """The channel layer keeps at most ``capacity`` messages for a subscriber that does not read; the rest are
    dropped (bounded memory) and the subscriber is told which ``seq`` range to fetch."""
    monkeypatch.setattr(get_channel_layer(), "capacity", 2)
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.viewer)
    communicator = await opened(stream(job.pk, token=token))
    assert await communicator.receive_nothing(timeout=0.2)

    # The viewer's event loop is blocked (it reads nothing) while ten batches are stored and published.
    in_own_thread(job.pk, *[lines(5) for _ in range(10)])
    kept = seqs(await frames_until_quiet(communicator))
    assert kept == list(range(1, len(kept) + 1))
    assert len(kept) <= 20
    await in_thread(in_own_thread)(job.pk, lines(5))

    frames = await frames_until_quiet(communicator)
    gap = {"type": "gap", "from_seq": len(kept) + 1, "to_seq": 50}
    assert frames == [gap, {"type": "lines", "lines": frames[1]["lines"]}]
    assert seqs(frames) == [51, 52, 53, 54, 55]

    client = await in_thread(api)(cast.viewer)
    page = await in_thread(client.get)(f"/api/v1/training-jobs/{job.pk}/logs", after_seq=gap["from_seq"] - 1,
                                       limit=gap["to_seq"] - gap["from_seq"] + 1)
    assert [line["seq"] for line in page.json()["lines"]] == list(range(gap["from_seq"], gap["to_seq"] + 1))
    await communicator.disconnect()
