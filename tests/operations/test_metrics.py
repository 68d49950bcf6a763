"""``/metrics`` after a real (sandbox) operation: the families it serves, and that only the token's bearer reads it."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cloud import aws
from mcp_server.testing import call_tool
from operations import demo

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-secret-0123456789"


def samples(client) -> dict[str, list]:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return {family.name: family.samples for family in text_string_to_metric_families(response.content.decode())}


def value(families: dict[str, list], name: str, **labels: str) -> float:
    return sum(sample.value for family in families.values() for sample in family
               if sample.name == name and labels.items() <= sample.labels.items())


def test_metrics_count_requests_operations_cloud_calls_and_tool_calls(sandbox, cast, drive, client, token_for,
                                                                      settings):
    settings.INSTANTSTART_METRICS_TOKEN = TOKEN
    operation = demo.demo_start(actor=cast.admin, team=cast.team, name="metrics", region="us-west-2", source="api")
    assert drive(operation).state == "succeeded"
    client.force_login(cast.admin)
    assert client.get(f"/api/v1/operations/{operation.pk}").status_code == 200
    assert call_tool(token_for(cast.admin), "get_operation", {"operation_id": str(operation.pk)})[0] is False
    sandbox.control("POST", "faults", {"target": "sagemaker:ListClusters", "kind": "throttle", "count": 1})
    aws.client("sagemaker", region="us-west-2").list_clusters()

    families = samples(client)
    assert value(families, "instantstart_http_requests_total", route="api/v1/operations/<id:operation_id>",
                 method="GET", status="200") >= 1
    assert value(families, "instantstart_http_request_duration_seconds_count",
                 route="api/v1/operations/<id:operation_id>") >= 1
    assert value(families, "instantstart_operations_started_total", kind=demo.KIND) >= 1
    assert value(families, "instantstart_operations_finished_total", kind=demo.KIND, outcome="succeeded") >= 1
    assert value(families, "instantstart_operation_phase_duration_seconds_count", kind=demo.KIND,
                 outcome="succeeded") >= 1
    assert value(families, "instantstart_cloud_calls_total", service="eks", operation="CreateCluster", error="") >= 1
    assert value(families, "instantstart_mcp_tool_calls_total", tool="get_operation", outcome="ok") >= 1
    assert value(families, "instantstart_cloud_throttles_total", service="sagemaker", operation="ListClusters") >= 1
    assert "instantstart_websocket_connections" in families
    assert [sample for sample in families["instantstart_celery_queue_depth"] if sample.labels == {"queue": "celery"}]
    assert "instantstart_celery_task_duration_seconds" in families


def test_metrics_answer_only_the_bearer_of_the_token(client, cast, settings):
    client.force_login(cast.admin)
    settings.INSTANTSTART_METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    settings.INSTANTSTART_METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
