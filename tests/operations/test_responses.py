"""``operations.api.responses.operation_response``: the answer of every REST change that may start an operation —
the caller's fields, the operation to follow (as the caller sees it now), then any trailing fields."""

from __future__ import annotations

import pytest
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from config.errors import NotFound
from operations import demo
from operations.api.responses import operation_response
from operations.models import Operation, OperationState

pytestmark = pytest.mark.django_db


def request_of(user) -> Request:
    request = Request(APIRequestFactory().post("/api/v1/anything"))
    request.user = user
    return request


def start(cast) -> Operation:
    return demo.demo_start(actor=cast.admin, team=cast.team, name="env", region="us-west-2", source="api")


def test_a_started_operation_is_202_between_the_fields_and_the_trailing_ones(cast):
    operation = start(cast)
    Operation.objects.filter(pk=operation.pk).update(state=OperationState.RUNNING)
    response = operation_response(request_of(cast.operator), operation, {"changed": True, "group": {"name": "g"}},
                                  trailing={"node_ids": ["i-1"]})
    assert response.status_code == status.HTTP_202_ACCEPTED
    assert list(response.data) == ["changed", "group", "operation", "node_ids"]
    body = response.data["operation"]
    assert (body["id"], body["state"]) == (operation.pk, "running")  # read again, not the object in hand
    assert [phase["slug"] for phase in body["phases"]] == ["bucket", "network", "role", "cluster", "addon"]
    assert body["capabilities"]["operation.cancel"] is True  # what this caller may do
    seen_by_viewer = operation_response(request_of(cast.viewer), operation).data["operation"]
    assert seen_by_viewer["capabilities"]["operation.cancel"] is False


def test_nothing_started_is_200_or_the_status_given_with_a_null_operation(cast):
    unchanged = operation_response(request_of(cast.viewer), None, {"changed": False, "changes": {}})
    assert unchanged.status_code == status.HTTP_200_OK
    assert JSONRenderer().render(unchanged.data) == b'{"changed":false,"changes":{},"operation":null}'
    created = operation_response(request_of(cast.admin), None, {"server": {"id": 1}},
                                 status_without=status.HTTP_201_CREATED)
    assert (created.status_code, created.data) == (201, {"server": {"id": 1}, "operation": None})
    assert list(operation_response(request_of(cast.admin), start(cast)).data) == ["operation"]


def test_an_operation_the_caller_cannot_see_is_not_found(cast):
    with pytest.raises(NotFound):
        operation_response(request_of(cast.outsider), start(cast), {"cluster": {}})
