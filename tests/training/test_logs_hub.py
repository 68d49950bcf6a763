"""The per-process fan-out of live logs (``training.logs.hub``): viewers of a job in one process share one channel-
layer subscription, a slow viewer's buffer stays bounded and it is told of the gap, the subscription ends with the
last viewer, and a channel-layer failure is survived."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async as in_thread
from channels.layers import get_channel_layer

from tests.training.test_logs_websocket import frames_until_quiet, in_own_thread, lines, make_job, opened, seqs, stream
from training.consumers import TrainingLogConsumer
from training.logs import hub
from training.logs.publish import log_group

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]


async def members(job_id: int) -> list[bytes]:
    layer = get_channel_layer()
    group = log_group(job_id)
    return await layer.connection(layer.consistent_hash(group)).zrange(layer._group_key(group), 0, -1)


async def eventually(check, timeout: float = 5.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := check()):
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)
    return value


def forwarders() -> list[asyncio.Task]:
    return [task for task in asyncio.all_tasks() if task.get_name().startswith("training-log-viewer")]


async def test_viewers_in_one_process_share_one_subscription_which_ends_with_the_last(cast, token_for):
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.viewer)
    first = await opened(stream(job.pk, token=token))
    second = await opened(stream(job.pk, token=token))
    ranked = await opened(stream(job.pk, token=token, query="rank=1"))
    assert await first.receive_nothing(timeout=0.2)

    the_hub = hub.hubs()[job.pk]
    assert len(the_hub.viewers) == 3
    assert the_hub.subscriptions == 1
    assert len(await members(job.pk)) == 1  # one channel in the group for three viewers

    await in_thread(in_own_thread)(job.pk, lines(4), lines(4))
    assert seqs(await frames_until_quiet(first)) == list(range(1, 9))
    assert seqs(await frames_until_quiet(second)) == list(range(1, 9))
    assert seqs(await frames_until_quiet(ranked)) == [2, 4, 6, 8]
    assert the_hub.received == 2  # each batch fetched once for the three

    await first.disconnect()
    await second.disconnect()
    assert hub.hubs()[job.pk] is the_hub and len(the_hub.viewers) == 1
    await ranked.disconnect()
    assert job.pk not in hub.hubs()
    await eventually(lambda: the_hub.task.done())
    assert await members(job.pk) == []


async def test_a_new_hub_after_the_last_viewer_left_gets_the_live_batches(cast, token_for):
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.viewer)
    await (await opened(stream(job.pk, token=token))).disconnect()
    again = await opened(stream(job.pk, token=token))
    await in_thread(in_own_thread)(job.pk, lines(3))
    assert seqs(await frames_until_quiet(again)) == [1, 2, 3]
    await again.disconnect()


async def test_a_slow_viewers_buffer_is_bounded_and_it_gets_a_gap_marker(cast, token_for, monkeypatch):
    """A viewer whose socket does not take frames (its ``send`` blocks) has at most ``VIEWER_BATCHES`` batches
    buffered; the rest are dropped, and once it catches up it is told which range to read over REST. A fast viewer
    of the same job is not held back."""
    monkeypatch.setattr(hub, "VIEWER_BATCHES", 2)
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.viewer)
    fast = await opened(stream(job.pk, token=token))
    assert await fast.receive_nothing(timeout=0.2)

    gate = asyncio.Event()
    send = TrainingLogConsumer.send

    async def blocked_send(self, *args, **kwargs):
        if self.scope["query_string"] == b"slow=1":
            await gate.wait()
        return await send(self, *args, **kwargs)

    monkeypatch.setattr(TrainingLogConsumer, "send", blocked_send)
    the_hub = hub.hubs()[job.pk]
    fast_viewers = set(the_hub.viewers)
    slow = await opened(stream(job.pk, token=token, query="slow=1"))  # ``accept`` is not sent with ``send``
    await eventually(lambda: len(forwarders()) == 2)  # joined, replayed (nothing), forwarding
    (slow_viewer,) = the_hub.viewers - fast_viewers
    sizes: list[int] = []
    offer = hub.Viewer.offer

    def watched_offer(viewer, batch):
        offer(viewer, batch)
        sizes.append(len(viewer.pending))

    monkeypatch.setattr(hub.Viewer, "offer", watched_offer)
    await in_thread(in_own_thread)(job.pk, *[lines(5) for _ in range(10)])
    await eventually(lambda: the_hub.received == 10)
    assert max(sizes) <= 2
    assert slow_viewer.dropped_to == 50
    assert len(slow_viewer.pending) == 2
    assert seqs(await frames_until_quiet(fast)) == list(range(1, 51))  # the fast viewer got everything

    gate.set()
    frames = await frames_until_quiet(slow)
    kept = seqs(frames)
    assert kept == list(range(1, len(kept) + 1)) and len(kept) <= 15  # the batch in flight and two buffered
    assert frames[-1] == {"type": "gap", "from_seq": len(kept) + 1, "to_seq": 50}

    await in_thread(in_own_thread)(job.pk, lines(5))
    assert seqs(await frames_until_quiet(slow)) == [51, 52, 53, 54, 55]
    await slow.disconnect()
    await fast.disconnect()
    await eventually(lambda: not forwarders() and job.pk not in hub.hubs() and the_hub.task.done())


async def test_the_end_reaches_a_viewer_whose_buffer_is_full(cast, token_for, monkeypatch):
    monkeypatch.setattr(hub, "VIEWER_BATCHES", 1)
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.viewer)
    communicator = await opened(stream(job.pk, token=token))
    assert await communicator.receive_nothing(timeout=0.2)
    # The viewer's event loop is blocked (nothing is drained) while batches and the end are published.
    in_own_thread(job.pk, *[lines(5) for _ in range(6)], end="succeeded")
    frames = await frames_until_quiet(communicator)
    assert seqs(frames) == list(range(1, 31))
    assert frames[-2:] == [{"type": "end", "state": "succeeded", "last_seq": 30}, {"type": "closed", "code": 1000}]
    assert job.pk not in hub.hubs()
    await eventually(lambda: not forwarders())


async def test_a_channel_layer_failure_is_survived(cast, token_for, monkeypatch):
    monkeypatch.setattr(hub, "RETRY_SECONDS", 0.05)
    layer = get_channel_layer()
    receive = layer.receive
    failures = [ConnectionError("redis went away")]
    job = await in_thread(make_job)(cast.team)
    token = await in_thread(token_for)(cast.viewer)
    communicator = await opened(stream(job.pk, token=token))
    the_hub = hub.hubs()[job.pk]

    async def failing_once(channel):
        if failures and the_hub.subscriptions == 1:
            raise failures.pop()
        return await receive(channel)

    # The hub's pending receive is replaced on its next call: wake it with a batch, then fail the next receive.
    monkeypatch.setattr(layer, "receive", failing_once)
    await in_thread(in_own_thread)(job.pk, lines(2))
    assert seqs(await frames_until_quiet(communicator)) == [1, 2]
    await eventually(lambda: the_hub.subscriptions == 2)
    await in_thread(in_own_thread)(job.pk, lines(2), end="succeeded")
    frames = await frames_until_quiet(communicator)
    assert seqs(frames) == [3, 4]
    assert frames[-2:] == [{"type": "end", "state": "succeeded", "last_seq": 4}, {"type": "closed", "code": 1000}]
    await eventually(lambda: the_hub.task.done())
    assert await members(job.pk) == []


async def test_a_viewers_buffer_never_exceeds_its_bound():
    the_hub = hub.Hub.__new__(hub.Hub)
    viewer = hub.Viewer(the_hub, 3)
    for index in range(10):
        viewer.offer(hub.Batch(index * 5 + 1, index * 5 + 5, '{"type": "lines", "lines": []}'))
        assert len(viewer.pending) <= 3
    assert [(await viewer.next())[0] for _ in range(3)] == ["batch"] * 3
    assert await viewer.next() == ("dropped", 50)
    viewer.end("failed")
    assert await viewer.next() == ("end", "failed")
