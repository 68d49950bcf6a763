"""An operation's progress stream and the team feed's operation frames, through the real ASGI app (routing, origin
check, session/token authentication) and the Redis channel layer, published by the real transitions and log code."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as in_thread
from channels.testing import WebsocketCommunicator

from accounts.models import Membership
from config.asgi import application
from config.realtime import publish_now
from operations import consumers, logs, services, transitions
from operations.models import OperationLog, OperationState
from portal import consumers as following
from tests.accounts.test_websocket import feed, session_cookie
from tests.operations.helpers import fail_first_phase, start
from tests.websockets import refused_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]


def stream(operation_id: int, *, token: str | None = None, cookie: str | None = None, query: str = ""):
    headers = []
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if cookie:
        headers += [(b"cookie", cookie.encode()), (b"origin", b"http://localhost:3099")]
    path = f"/ws/operations/{operation_id}/" + (f"?{query}" if query else "")
    return WebsocketCommunicator(application, path, headers=headers)


def append(operation, *messages: str) -> None:
    for message in messages:
        logs.append(operation.pk, message)


async def opened(communicator) -> WebsocketCommunicator:
    connected, code = await communicator.connect()
    assert connected, code
    return communicator


async def frames_until_quiet(communicator, timeout: float = 0.3) -> list[dict]:
    frames = []
    while not await communicator.receive_nothing(timeout=timeout):
        frames.append(await communicator.receive_json_from())
    return frames


def seqs(frames: list[dict]) -> list[int]:
    return [line["seq"] for frame in frames if frame["type"] == "log" for line in frame["lines"]]


# --- the stream ---------------------------------------------------------------------------------------------


async def test_snapshot_then_the_lines_after_the_clients_last_seq(cast, token_for):
    operation = await in_thread(start)(cast)
    await in_thread(append)(operation, "two", "three", "four")
    token = await in_thread(token_for)(cast.viewer, read_only=True)
    communicator = await opened(stream(operation.pk, token=token, query="after_seq=2"))

    snapshot = await communicator.receive_json_from()
    assert snapshot["type"] == "snapshot"
    assert (snapshot["operation"]["id"], snapshot["operation"]["state"]) == (operation.pk, "pending")
    assert [phase["slug"] for phase in snapshot["operation"]["phases"]] == [
        "bucket", "network", "role", "cluster", "addon"]
    stored = await in_thread(lambda: [logs.line_payload(row) for row in operation.logs.filter(seq__gt=2)])()
    assert [line["message"] for line in stored] == ["three", "four"]
    assert await communicator.receive_json_from() == {"type": "log", "lines": stored}
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


async def test_replay_comes_in_capped_batches(cast, token_for, monkeypatch):
    monkeypatch.setattr(consumers, "LOG_BATCH", 2)
    operation = await in_thread(start)(cast)
    await in_thread(append)(operation, "2", "3", "4", "5")
    communicator = await opened(stream(operation.pk, token=await in_thread(token_for)(cast.viewer)))

    frames = await frames_until_quiet(communicator)
    assert [frame["type"] for frame in frames] == ["snapshot", "log", "log", "log"]
    assert [[line["seq"] for line in frame["lines"]] for frame in frames[1:]] == [[1, 2], [3, 4], [5]]
    await communicator.disconnect()


async def test_live_changes_follow_in_order_without_duplicates_or_stale_updates(cast, token_for):
    operation = await in_thread(start)(cast)
    communicator = await opened(stream(operation.pk, token=await in_thread(token_for)(cast.operator)))
    frames = await frames_until_quiet(communicator)
    assert [frame["type"] for frame in frames] == ["snapshot", "log"]
    stale = frames[0]["operation"]

    def progress():
        operation.refresh_from_db()
        transitions.move(operation, OperationState.RUNNING)
        logs.append(operation.pk, "Started.")
        logs.append(operation.pk, "Shared bucket: started.", phase="bucket")
        first_line = OperationLog.objects.get(operation=operation, seq=1)
        publish_now(f"operation.{operation.pk}", "operation.log", logs.line_payload(first_line))
        publish_now(f"operation.{operation.pk}", "operation.updated", stale)

    await in_thread(progress)()
    frames = await frames_until_quiet(communicator)
    assert [(frame["type"], frame.get("operation", {}).get("state")) for frame in frames] == [
        ("operation", "running"), ("log", None), ("log", None)]
    assert seqs(frames) == [2, 3]
    await communicator.disconnect()


async def test_end_frame_after_the_final_lines_and_the_socket_survives_a_retry(cast, token_for):
    operation = await in_thread(start)(cast)
    communicator = await opened(stream(operation.pk, token=await in_thread(token_for)(cast.operator)))
    await frames_until_quiet(communicator)

    await in_thread(fail_first_phase)(operation)
    frames = await frames_until_quiet(communicator)
    types = [frame["type"] for frame in frames]
    end = types.index("end")
    assert frames[end] == {"type": "end", "state": "failed", "last_seq": 2}
    assert seqs(frames[:end]) == [2] and seqs(frames[end:]) == [], "the error line comes once, before the end"
    failed = [frame for frame in frames if frame["type"] == "operation"][-1]["operation"]
    assert failed["error_code"] == "cloud_validation"
    assert failed["phases"][0]["error_detail"] == {"code": "InvalidParameterException", "message": "bad input"}

    await in_thread(services.operation_retry)(actor=cast.operator, operation=operation, source="portal")
    frames = await frames_until_quiet(communicator)
    assert [frame["operation"]["state"] for frame in frames if frame["type"] == "operation"][-1] == "running"
    assert "end" not in [frame["type"] for frame in frames]
    assert seqs(frames) == [3]
    await communicator.disconnect()


async def test_a_terminal_operation_answers_snapshot_lines_and_end(cast, token_for):
    operation = await in_thread(start)(cast)
    await in_thread(fail_first_phase)(operation)
    communicator = await opened(stream(operation.pk, token=await in_thread(token_for)(cast.viewer),
                                       query="after_seq=1"))
    frames = await frames_until_quiet(communicator)
    assert [frame["type"] for frame in frames] == ["snapshot", "log", "end"]
    assert frames[0]["operation"]["state"] == "failed"
    assert seqs(frames) == [2]
    assert frames[2] == {"type": "end", "state": "failed", "last_seq": 2}
    await communicator.disconnect()


async def test_a_run_of_the_engine_streams_every_line_once_and_ends(cast, token_for, sandbox, drive):
    operation = await in_thread(start)(cast)
    cookie = await in_thread(session_cookie)(cast.viewer)
    communicator = await opened(stream(operation.pk, cookie=cookie))

    await in_thread(drive, thread_sensitive=False)(operation)
    frames = await frames_until_quiet(communicator, timeout=0.5)
    stored = await in_thread(lambda: list(operation.logs.values_list("seq", flat=True)))()
    assert seqs(frames) == stored == list(range(1, len(stored) + 1))
    assert frames[-1] == {"type": "end", "state": "succeeded", "last_seq": stored[-1]}
    states = [frame["operation"]["state"] for frame in frames if frame["type"] in ("snapshot", "operation")]
    assert states[0] == "pending" and states[-1] == "succeeded"
    assert "running" in states
    last = [frame for frame in frames if frame["type"] == "operation"][-1]["operation"]
    assert {phase["state"] for phase in last["phases"]} == {"succeeded"}
    assert last["phases"][3]["reference"]["arn"].startswith("arn:aws:eks:us-west-2:")
    await communicator.disconnect()


# --- who may follow -----------------------------------------------------------------------------------------


async def test_anonymous_and_forged_tokens_are_refused(cast):
    operation = await in_thread(start)(cast)
    assert await refused_with(stream(operation.pk)) == 4401
    assert await refused_with(stream(operation.pk, token="isk_forged")) == 4401


async def test_outsider_and_unknown_operation_get_the_same_answer(cast, token_for):
    operation = await in_thread(start)(cast)
    token = await in_thread(token_for)(cast.outsider)
    assert await refused_with(stream(operation.pk, token=token)) == 4404
    assert await refused_with(stream(999_999, token=token)) == 4404


@pytest.mark.parametrize("query", ["after_seq=-1", "after_seq=abc", "after_seq=99999999999"])
async def test_a_bad_after_seq_is_refused(cast, token_for, query):
    operation = await in_thread(start)(cast)
    token = await in_thread(token_for)(cast.viewer)
    assert await refused_with(stream(operation.pk, token=token, query=query)) == 4400


async def test_a_removed_member_is_closed_on_the_next_event(cast, token_for, monkeypatch):
    monkeypatch.setattr(following, "RECHECK_SECONDS", 0)
    operation = await in_thread(start)(cast)
    communicator = await opened(stream(operation.pk, token=await in_thread(token_for)(cast.viewer)))
    await frames_until_quiet(communicator)
    await in_thread(append)(operation, "still here")
    assert seqs([await communicator.receive_json_from(timeout=5)]) == [2]

    await in_thread(Membership.objects.filter(team=cast.team, user=cast.viewer).delete)()
    await in_thread(append)(operation, "gone")
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    await communicator.disconnect()


# --- the team feed ------------------------------------------------------------------------------------------


async def test_the_team_feed_forwards_operation_changes(cast, token_for):
    communicator = await opened(feed(cast.team.pk, token=await in_thread(token_for)(cast.viewer)))
    assert (await communicator.receive_json_from())["type"] == "subscribed"

    operation = await in_thread(start)(cast)
    message = await communicator.receive_json_from(timeout=5)
    assert message["type"] == "operation"
    assert (message["operation"]["id"], message["operation"]["state"]) == (operation.pk, "pending")
    await in_thread(services.operation_cancel)(actor=cast.operator, operation=operation, source="api")
    frames = await frames_until_quiet(communicator)
    assert [frame["operation"]["state"] for frame in frames if frame["type"] == "operation"] == ["cancelled"]
    await communicator.disconnect()


async def test_the_team_feed_stops_operation_frames_when_access_ends(cast, token_for, monkeypatch):
    monkeypatch.setattr(following, "RECHECK_SECONDS", 0)
    communicator = await opened(feed(cast.team.pk, token=await in_thread(token_for)(cast.viewer)))
    await communicator.receive_json_from()
    await in_thread(Membership.objects.filter(team=cast.team, user=cast.viewer).delete)()
    await in_thread(start)(cast)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    await communicator.disconnect()
