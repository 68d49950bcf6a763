"""``operations.idempotency.replayed``: the operation an Idempotency-Key already started in a team — what every
service that starts an operation returns instead of starting a second one."""

from __future__ import annotations

import pytest

from operations import demo
from operations.idempotency import replayed

pytestmark = pytest.mark.django_db


def start(actor, team, key: str):
    return demo.demo_start(actor=actor, team=team, name="env", region="us-west-2", source="api", idempotency_key=key)


@pytest.mark.parametrize("key", [None, ""])
def test_without_a_key_nothing_is_replayed(cast, key):
    start(cast.admin, cast.team, "k-1")
    assert replayed(cast.team, key) is None


def test_a_key_used_in_the_team_replays_its_operation_for_any_member(cast):
    first = start(cast.admin, cast.team, "k-1")
    assert replayed(cast.team, "k-1") == first
    assert replayed(cast.team, "k-2") is None


def test_the_same_key_in_another_team_is_another_request(cast, make_team):
    start(cast.admin, cast.team, "k-1")
    other = make_team("Other", admin=cast.admin)
    assert replayed(other, "k-1") is None
