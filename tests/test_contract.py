"""One validation path: the same bad input through the portal, REST and MCP gets the same error code.

Each case sends one input three ways (the portal form, the REST endpoint, the MCP tool), then checks
that REST and MCP answer the identical body, that the portal page carries the same codes, and that
nothing was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent, Membership, Team
from mcp_server.testing import call_tool
from tests import factories


@dataclass(frozen=True)
class BadInput:
    name: str
    portal_url: str
    rest_path: str
    tool: str
    data: dict[str, Any]
    code: str
    field_codes: dict[str, str]


CASES = [
    BadInput("team slug", "team-create", "/api/v1/teams", "create_team",
             {"name": "Robotics", "slug": "Not A Slug"}, "validation_failed", {"slug": "invalid_slug"}),
    BadInput("team name taken", "team-create", "/api/v1/teams", "create_team",
             {"name": "vision", "slug": "vision-two"}, "validation_failed", {"name": "unique"}),
    BadInput("team name missing", "team-create", "/api/v1/teams", "create_team",
             {"name": "", "slug": "robotics"}, "validation_failed", {"name": "blank"}),
    BadInput("team name too long", "team-create", "/api/v1/teams", "create_team",
             {"name": "x" * 101, "slug": "robotics"}, "validation_failed", {"name": "max_length"}),
]


def portal_codes(response) -> set[str]:
    return set(re.findall(r'data-error-code="([^"]+)"', response.content.decode()))


@pytest.mark.parametrize("bad", CASES, ids=lambda bad: bad.name)
@pytest.mark.usefixtures("open_team_creation")
def test_same_bad_input_same_code_on_every_face(bad: BadInput, cast, token_for):
    written = (Team.objects.count(), Membership.objects.count())
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()

    rest = Client().post(bad.rest_path, bad.data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, bad.tool, bad.data)
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse(bad.portal_url), bad.data)

    rest_body = rest.json()
    assert rest_body["code"] == bad.code
    assert {field: errors[0]["code"] for field, errors in rest_body["fields"].items()} == bad.field_codes
    assert is_error
    assert mcp_body == rest_body
    assert portal.status_code == rest.status_code
    assert portal_codes(portal) == {bad.code, *bad.field_codes.values()}
    assert (Team.objects.count(), Membership.objects.count()) == written
    assert AuditEvent.objects.count() == events


def test_invitation_conflict_is_the_same_on_portal_rest_and_mcp(cast, token_for):
    from mcp_server.testing import call_tool

    secret = token_for(cast.admin)
    body = {"invitee": "nina@example.com", "role": "viewer"}
    first = Client().post(f"/api/v1/teams/{cast.team.pk}/invitations", body, content_type="application/json",
                          HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert first.status_code == 201
    rest = Client().post(f"/api/v1/teams/{cast.team.pk}/invitations", body, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "invite_to_team", {"team_id": cast.team.pk, **body})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("member-invite", args=[cast.team.pk]), body)
    assert rest.status_code == portal.status_code == 409
    assert rest.json()["code"] == "invitation_pending"
    assert is_error and mcp_body == rest.json()
    assert "invitation_pending" in portal_codes(portal)


@pytest.mark.parametrize(("data", "field", "code"), [
    ({"name": "Bad Name!"}, "name", "invalid"),
    ({"name": "ok", "region": "mars-north-1"}, "region", "unknown_region"),
])
def test_demo_operation_bad_input_same_code_on_every_face(data, field, code, cast, token_for):
    from operations.models import Operation

    data = {**data, "team": cast.team.pk}
    secret = token_for(cast.operator)
    events = AuditEvent.objects.count()

    rest = Client().post("/api/v1/demo-operations", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "start_demo_operation", data)
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("operation-demo"), data)

    assert rest.status_code == 400
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert {"validation_failed", code} <= portal_codes(portal)
    assert not Operation.objects.exists()
    assert AuditEvent.objects.count() == events


def test_retrying_a_running_operation_is_the_same_conflict_on_every_face(cast, token_for):
    from operations import demo
    from operations.models import Operation

    operation = demo.demo_start(actor=cast.admin, team=cast.team, name="busy", region="us-west-2", source="api")
    Operation.objects.filter(pk=operation.pk).update(state="running")
    secret = token_for(cast.operator)

    rest = Client().post(f"/api/v1/operations/{operation.pk}/retry", {}, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "retry_operation", {"operation_id": operation.pk})
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("operation-retry", args=[operation.pk]), follow=True)

    assert (rest.status_code, rest.json()["code"]) == (409, "operation_not_retryable")
    assert is_error and mcp_body == rest.json()
    assert "operation_not_retryable" in portal_codes(portal)
    assert Operation.objects.get(pk=operation.pk).attempt == 1


CLUSTER = {"name": "alpha", "region": "us-west-2", "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
           "instance_count": 1}


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"name": "bad_name"}, "name", "invalid_cluster_name"),
    ({"instance_count": 0}, "instance_count", "invalid_count"),
    ({"zone": "us-west-2z"}, "zone", "unknown_zone"),
    ({"instance_type": "ml.x9.huge"}, "instance_type", "instance_type_not_allowed"),
    ({"instance_type": "ml.p5.48xlarge", "instance_count": 40}, "instance_count", "quota_exceeded"),
])
def test_cluster_create_bad_input_same_code_on_every_face(change, field, code, cast, token_for, sandbox):
    from clusters.models import Cluster
    from operations.models import Operation

    data = {**CLUSTER, **change, "team": cast.team.pk}
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()

    rest = Client().post("/api/v1/clusters", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "create_cluster", data)
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("cluster-create"), data)

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert code in portal_codes(portal)
    assert not Cluster.objects.exists() and not Operation.objects.exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(("face", "change", "field", "code"), [
    ("cluster", {"region": "eu-north-9", "zone": "eu-north-9a"}, "region", "unknown_region"),
    ("cluster", {"zone": "us-west-2z"}, "zone", "unknown_zone"),
    ("mlflow", {"region": "eu-north-9"}, "region", "unknown_region"),
])
def test_an_unknown_region_or_zone_has_one_top_level_code_on_every_face(face, change, field, code, cast, token_for,
                                                                        sandbox):
    """One rule for a refusal naming fields: the top-level code is ``validation_failed`` (the specific code is the
    field's), whichever check refuses — a cluster's preflight or an MLflow server's region check."""
    rest_path, tool, portal_url, data = {
        "cluster": ("/api/v1/clusters", "create_cluster", "cluster-create", {**CLUSTER, **change}),
        "mlflow": ("/api/v1/mlflow-servers", "create_mlflow_server", "mlflow-create", change),
    }[face]
    data = {**data, "team": cast.team.pk}
    secret = token_for(cast.admin)

    rest = Client().post(rest_path, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, tool, data)
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse(portal_url), data)

    assert (rest.status_code, rest.json()["code"]) == (400, "validation_failed"), rest.content
    assert {name: [error["code"] for error in errors] for name, errors in rest.json()["fields"].items()} == {
        field: [code]}
    assert is_error and mcp_body == rest.json()
    assert portal_codes(portal) >= {"validation_failed", code}


def test_deleting_another_teams_cluster_is_not_found_on_every_face(cast, token_for, make_team):
    other = factories.cluster(make_team("Elsewhere"), "theirs")
    secret = token_for(cast.admin)
    rest = Client().post(f"/api/v1/clusters/{other.pk}/delete", {"confirm": "theirs"},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "delete_cluster", {"cluster_id": other.pk, "confirm": "theirs"})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("cluster-delete", args=[other.pk]), {"confirm": "theirs"})

    assert (rest.status_code, rest.json()["code"]) == (404, "not_found")
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 404
    other.refresh_from_db()
    assert other.state == "active"


GROUP = {"name": "more", "instance_type": "ml.g5.8xlarge", "instance_count": 1, "zone": "us-west-2a"}


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"instance_type": "ml.x9.huge"}, "instance_type", "instance_type_not_allowed"),
    ({"instance_count": 40}, "instance_count", "quota_exceeded"),
    ({"interface_mode": "efa-only", "instance_type": "ml.g5.xlarge"}, "interface_mode", "efa_not_supported"),
    ({"name": "workers"}, "name", "instance_group_name_taken"),
    ({"capacity_type": "spot", "training_plan_arn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/x"},
     "training_plan_arn", "training_plan_unexpected"),
])
def test_instance_group_add_bad_input_same_code_on_every_face(change, field, code, cast, token_for, sandbox):
    from clusters.models import InstanceGroup
    from operations.models import Operation
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster_id = tracked_hyperpod_cluster(cast.team).pk
    data = {**GROUP, **change}
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()

    rest = Client().post(f"/api/v1/clusters/{cluster_id}/instance-groups", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "add_instance_group", {"cluster_id": cluster_id, **data})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("cluster-group-add", args=[cluster_id]), data)

    assert rest.status_code == 400, rest.content
    assert code in [error["code"] for error in rest.json()["fields"][field]]
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert code in portal_codes(portal)
    assert list(InstanceGroup.objects.values_list("name", flat=True)) == ["workers"]
    assert not Operation.objects.exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(("change", "field"), [({"capacity_type": "spot"}, "capacity_type"),
                                               ({"interface_mode": "efa-only"}, "interface_mode"),
                                               ({"zone": "us-west-2c"}, "zone")])
def test_changing_a_fixed_group_field_is_immutable_field_on_every_face(change, field, cast, token_for, sandbox):
    from operations.models import Operation
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    ids = {"cluster_id": tracked_hyperpod_cluster(cast.team).pk, "name": "workers"}
    secret = token_for(cast.admin)
    rest = Client().patch(f"/api/v1/clusters/{ids['cluster_id']}/instance-groups/workers", change,
                          content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "scale_instance_group", {**ids, **change})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("cluster-group-change", args=[ids["cluster_id"], "workers"]), change, follow=True)

    assert rest.status_code == 400, rest.content
    assert (rest.json()["code"], rest.json()["fields"][field][0]["code"]) == ("validation_failed", "immutable_field")
    assert is_error and mcp_body == rest.json()
    assert "immutable_field" in portal_codes(portal)
    assert not Operation.objects.exists()


def test_node_group_scale_bad_input_same_code_on_every_face(cast, token_for, sandbox):
    from operations.models import Operation
    from tests import matrix  # noqa: F401  (loads tests.matrix_node_groups after the names it builds on)
    from tests.matrix_node_groups import node_groups_cluster

    cluster_id = node_groups_cluster(cast.team).pk
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()
    for name, change, field, code in (("workers", {"desired_size": 4}, "desired_size", "desired_above_max"),
                                      ("workers", {"max_size": 0}, "max_size", "min_value"),
                                      ("system", {"desired_size": 0, "min_size": 0}, "desired_size",
                                       "system_nodes_required")):
        rest = Client().patch(f"/api/v1/clusters/{cluster_id}/node-groups/{name}", change,
                              content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
        is_error, mcp_body = call_tool(secret, "scale_node_group", {"cluster_id": cluster_id, "name": name, **change})
        browser = Client()
        browser.force_login(cast.admin)
        portal = browser.post(reverse("cluster-node-group-scale", args=[cluster_id, name]), change, follow=True)

        assert rest.status_code == 400, rest.content
        assert (rest.json()["code"], rest.json()["fields"][field][0]["code"]) == ("validation_failed", code)
        assert is_error and mcp_body == rest.json()
        assert code in portal_codes(portal)
    assert not Operation.objects.exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(("data", "field", "code"), [
    ({"tiered_checkpointing": {"enabled": True, "memory_percentage": 0}}, "tiered_checkpointing.memory_percentage",
     "out_of_range"),
    ({"tiered_checkpointing": {"enabled": False, "memory_percentage": 30}}, "tiered_checkpointing.memory_percentage",
     "not_applicable"),
    ({"autoscaling": {"enabled": "yes"}}, "autoscaling.enabled", "invalid_type"),
])
def test_feature_change_bad_input_same_code_on_every_face(data, field, code, cast, token_for):
    from operations.models import Operation

    cluster = factories.cluster(cast.team)
    secret = token_for(cast.admin)
    rest = Client().patch(f"/api/v1/clusters/{cluster.pk}/features", data, content_type="application/json",
                          HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "update_advanced_features", {"cluster_id": cluster.pk, **data})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("cluster-features", args=[cluster.pk]), data, content_type="application/json")

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert code in portal_codes(portal)
    assert not Operation.objects.exists()


@pytest.mark.parametrize(("recipe", "config", "field", "code"), [
    ("tensorflow", {"script": "train.py"}, "recipe", "unknown_recipe"),
    ("pytorch", {"script": "../outside.py"}, "script", "path_outside_shared_bucket"),
    ("pytorch", {"script": "missing.py"}, "script", "script_not_found"),
    ("pytorch", {"script": "train.py", "gpus_per_node": 9}, "gpus_per_node", "too_many_gpus"),
    ("ms-swift", {"command_type": "dpo", "config": "model: m"}, "command_type", "unknown_command_type"),
    ("llama-factory", {"project": "proj", "config": "stage: [sft"}, "config", "invalid_yaml"),
])
def test_training_submit_bad_input_same_code_on_every_face(recipe, config, field, code, cast, token_for, sandbox):
    from tests.training.sandbox import training_cluster
    from training.models import TrainingJob

    cluster = training_cluster(cast.team, count=1, ray=False)
    data = {"cluster": cluster.pk, "recipe": recipe, "name": "contract", "config": config}
    secret = token_for(cast.operator)
    events = AuditEvent.objects.count()

    rest = Client().post("/api/v1/training-jobs", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "submit_training_job", data)
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("training-job-submit"), {
        "cluster": cluster.pk, "recipe": recipe, "name": "contract",
        **{f"cfg-{key}": value for key, value in config.items()}})

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert code in portal_codes(portal)
    assert not TrainingJob.objects.exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"repo_id": "meta-llama/Llama-3.1-8B-Instruct"}, "hf_token", "hub_gated"),
    ({"repo_id": "nobody/nothing"}, "repo_id", "hub_repo_not_found"),
    ({"repo_id": "../../api/whoami-v2"}, "repo_id", "hub_repo_id_invalid"),
    ({"repo_id": "Qwen/Qwen3-8B", "destination": "s3://elsewhere/x"}, "destination", "path_outside_shared_bucket"),
])
def test_model_download_bad_input_same_code_on_every_face(change, field, code, cast, token_for, sandbox):
    from inference.models import ModelDownload
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    data = {"cluster": cluster.pk, "name": "contract", "source": "hub", "revision": "main", **change}
    secret = token_for(cast.operator)
    events = AuditEvent.objects.count()

    rest = Client().post("/api/v1/model-downloads", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "download_model", data)
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("inference-model-download"), data)

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400 and code in portal_codes(portal)
    assert not ModelDownload.objects.exists() and AuditEvent.objects.count() == events


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"gpus": 8}, "gpus", "too_many_gpus"),
    ({"gpus": 2, "tensor_parallel": 4}, "tensor_parallel", "parallelism_mismatch"),
    ({"model": "/etc/models/x"}, "model", "path_outside_shared_bucket"),
    ({"engine": "custom", "command": ["serve"]}, "image", "image_required"),
    ({"replicas": 2, "router": {"policy": "round_robin"}}, "router", "router_needs_sglang"),
    ({"engine": "sglang", "router": {"policy": "round_robin"}}, "router", "router_needs_replicas"),
])
def test_endpoint_deploy_bad_input_same_code_on_every_face(change, field, code, cast, token_for, sandbox):
    from inference.models import Endpoint
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False, instance_type="ml.g5.12xlarge")
    data = {"cluster": cluster.pk, "name": "contract", "model": "models/m", "gpus": 1, **change}
    secret = token_for(cast.operator)
    events = AuditEvent.objects.count()

    rest = Client().post("/api/v1/endpoints", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "deploy_endpoint", data)
    browser = Client()
    browser.force_login(cast.operator)
    form = {key: value for key, value in data.items() if key != "router"}  # the form names the router's fields
    form |= {f"router.{key}": value for key, value in data.get("router", {}).items()}  # router.<field>
    portal = browser.post(reverse("inference-endpoint-deploy"), {**form, "command": " ".join(data.get("command", []))})

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400 and code in portal_codes(portal)
    assert not Endpoint.objects.exists() and AuditEvent.objects.count() == events


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"min_replicas": 3, "max_replicas": 2}, "min_replicas", "min_replicas_above_max"),
    ({"metric": "sglang:num_queue_reqs"}, "metric", "metric_not_exported"),
    ({"min_replicas": 0}, "min_replicas", "scale_to_zero_not_allowed"),
    ({"min_replicas": 0, "scale_to_zero": True, "prometheus_url": "http://prometheus.monitoring:9090"},
     "scale_to_zero", "scale_to_zero_needs_metric_source"),
])
def test_endpoint_autoscaling_bad_input_same_code_on_every_face(change, field, code, cast, token_for, sandbox):
    from inference.models import Endpoint
    from operations.models import Operation
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    endpoint = Endpoint.objects.create(team=cast.team, cluster=cluster, name="contract", namespace="team-x",
                                       engine="vllm", image="vllm/vllm-openai:v0.10.1", model_source="shared",
                                       model="/mnt/shared/m", served_model_name="contract", instance_group="workers",
                                       instance_type="ml.g5.8xlarge", gpus=1, port=8000, state="ready")
    data = {"metric": "waiting_requests", "target": 2, **change}
    secret = token_for(cast.operator)
    events, operations = AuditEvent.objects.count(), Operation.objects.count()

    rest = Client().put(f"/api/v1/endpoints/{endpoint.pk}/autoscaling", data, content_type="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "set_endpoint_autoscaling", {"endpoint_id": endpoint.pk, **data})
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("inference-endpoint-autoscaling", args=[endpoint.pk]), data)

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400 and code in portal_codes(portal)
    endpoint.refresh_from_db()
    assert endpoint.autoscaling == {} and AuditEvent.objects.count() == events
    assert Operation.objects.count() == operations


def test_deciding_an_approval_request_is_the_same_refusal_on_portal_and_rest(cast, token_for, make_user):
    """A rejection without a reason, and any decision on an expired request, are refused identically on both faces
    that decide; the MCP face has no decision tool (an agent never decides), and its status tool reads the same
    request REST shows."""
    from datetime import timedelta

    from django.utils import timezone

    from operations.models import ApprovalRequest
    from tests.matrix import case

    approval = ApprovalRequest.objects.get(pk=case("approval_requests_reject").params(cast, cast.admin)["request_id"])
    approver = make_user("abe")
    Membership.objects.create(team=cast.team, user=approver, role="admin")
    secret = token_for(approver)
    browser = Client()
    browser.force_login(approver)

    rest = Client().post(f"/api/v1/approval-requests/{approval.pk}/reject", {"reason": ""},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    portal = browser.post(reverse("approval-reject", args=[approval.pk]), {"reason": ""}, follow=True)
    assert rest.status_code == 400 and rest.json()["fields"]["reason"][0]["code"] == "blank"
    assert {"validation_failed", "blank"} <= portal_codes(portal)

    ApprovalRequest.objects.filter(pk=approval.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    rest = Client().post(f"/api/v1/approval-requests/{approval.pk}/approve", {}, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    portal = browser.post(reverse("approval-approve", args=[approval.pk]), {}, follow=True)
    assert (rest.status_code, rest.json()["code"]) == (409, "approval_expired")
    assert "approval_expired" in portal_codes(portal)
    is_error, mcp_body = call_tool(secret, "get_approval_request", {"request_id": approval.pk})
    shown = Client().get(f"/api/v1/approval-requests/{approval.pk}", HTTP_AUTHORIZATION=f"Bearer {secret}").json()
    assert not is_error and mcp_body == shown and shown["state"] == "expired"
    assert ApprovalRequest.objects.get(pk=approval.pk).state == "pending"


@pytest.mark.parametrize(("query", "field", "code"), [
    ({"operation_id": 999999}, "operation_id", "not_a_creation"),
    ({"operation_id": 0}, "operation_id", "min_value"),
])
def test_a_diagnosis_refuses_bad_input_alike_over_rest_and_mcp(query, field, code, cast, token_for):
    """Diagnostics have no portal form: REST and MCP answer the same field error (no portal face)."""
    cluster = factories.cluster(cast.team, "diagnosed", state="failed")
    secret = token_for(cast.viewer)
    rest = Client().get(f"/api/v1/clusters/{cluster.pk}/diagnostics/creation", query,
                        HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "diagnose_cluster_creation", {"cluster_id": cluster.pk, **query})

    assert (rest.status_code, rest.json()["code"]) == (400, "validation_failed"), rest.content
    assert [error["code"] for error in rest.json()["fields"][field]] == [code]
    assert is_error and mcp_body == rest.json()


@pytest.mark.parametrize(("query", "field", "code"), [
    ({"instances": "ml.g5.8xlarge:2", "region": "mars-north-1"}, "region", "unknown_region"),
    ({"instances": "ml.warp.huge:1"}, "instances", "unknown_instance_type"),
    ({"instances": "ml.g5.8xlarge:-1"}, "instances", "invalid"),
])
def test_an_estimate_refuses_bad_input_alike_over_rest_and_mcp(query, field, code, cast, token_for):
    """Estimates are read by REST and MCP (the portal's fragment shows none for half-typed input): the same field
    error on both, before the Price List is asked."""
    secret = token_for(cast.viewer)
    rest = Client().get("/api/v1/estimates", {**query, "team": cast.team.pk}, HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "estimate_cost", {**query, "team": cast.team.pk})

    assert (rest.status_code, rest.json()["code"]) == (400, "validation_failed"), rest.content
    assert [error["code"] for error in rest.json()["fields"][field]] == [code]
    assert is_error and mcp_body == rest.json()


@pytest.mark.parametrize(("change", "form", "field", "code"), [
    ({"instance_type": "ml.p5.48xlarge"}, {"instance_type": "ml.p5.48xlarge"}, "instance_type",
     "unknown_instance_type"),
    ({"memory_gib": 100, "kv_cache": {"l1_size_gib": 100}}, {"memory_gib": "100", "kv_l1_size_gib": "100"},
     "kv_cache.l1_size_gib", "kv_cache_too_large"),
    ({"kv_cache": {"l2_backend": "redis", "l2_url": "http://cache:6379"}},
     {"kv_l2_backend": "redis", "kv_l2_url": "http://cache:6379"}, "kv_cache.l2_url", "invalid_redis_url"),
    ({"routing": {"strategy": "fastest"}}, {"routing_strategy": "fastest"}, "routing.strategy",
     "unsupported_routing_strategy"),
    ({"autoscaling": {"min_replicas": 0, "max_replicas": 2}},
     {"autoscaling_min_replicas": "0", "autoscaling_max_replicas": "2"}, "autoscaling.min_replicas",
     "scale_to_zero_not_allowed"),
])
def test_managed_endpoint_bad_input_same_code_on_every_face(change, form, field, code, cast, token_for, sandbox):
    from inference.models import Endpoint
    from tests.clusters.sandbox import tracked_hyperpod_cluster

    cluster = tracked_hyperpod_cluster(cast.team, cloud=False)
    data = {"cluster": cluster.pk, "name": "contract", "model": "models/m", **change}
    secret = token_for(cast.operator)
    events = AuditEvent.objects.count()

    rest = Client().post("/api/v1/managed-endpoints", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "create_managed_endpoint", data)
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("inference-managed-endpoint-create"),
                          {"cluster": cluster.pk, "name": "contract", "model": "models/m", **form})

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400 and code in portal_codes(portal)
    assert not Endpoint.objects.exists() and AuditEvent.objects.count() == events


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"url": "http://hooks.example.com/x"}, "url", "webhook_url_not_https"),
    ({"event_types": ["cluster.exploded"]}, "event_types", "unknown_event_type"),
    ({"channel": "email", "url": "", "email": "nobody"}, "email", "invalid_email"),
])
def test_notification_subscription_bad_input_same_code_on_every_face(change, field, code, cast, token_for):
    from notifications.models import Subscription

    cast.admin.current_team = cast.team
    cast.admin.save(update_fields=["current_team"])
    data = {"name": "hooks", "channel": "webhook", "url": "https://hooks.example.com/x",
            "event_types": ["operation.failed"], **change}
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()
    rest = Client().post(f"/api/v1/teams/{cast.team.pk}/notification-subscriptions", data,
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "create_notification_subscription", {"team_id": cast.team.pk, **data})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("notification-subscription-create"), data)

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400 and code in portal_codes(portal)
    assert not Subscription.objects.exists() and AuditEvent.objects.count() == events


@pytest.mark.parametrize(("data", "field", "code"), [
    ({"name": "Not A Slug"}, "name", "invalid_slug"),
    ({"name": "ci-bot", "role": "admin"}, "role", "invalid_choice"),
    ({"name": "taken"}, "name", "unique"),
])
def test_service_account_bad_input_same_code_on_every_face(data, field, code, cast, token_for):
    from accounts.models import ServiceAccount
    from accounts.service_accounts.services import service_account_create

    service_account_create(actor=cast.admin, team=cast.team, name="taken", role="viewer", source="system")
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()

    rest = Client().post(f"/api/v1/teams/{cast.team.pk}/service-accounts", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "create_service_account", {"team_id": cast.team.pk, **data})
    browser = Client()
    browser.force_login(cast.admin)
    portal = browser.post(reverse("service-account-list", args=[cast.team.pk]), data)

    assert rest.status_code == portal.status_code == 400
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert {"validation_failed", code} <= portal_codes(portal)
    assert ServiceAccount.objects.count() == 1
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(("data", "field", "code"), [
    ({"amount_usd": "-1.00"}, "amount_usd", "budget_negative"),
    ({"amount_usd": "100", "thresholds": [0, 50]}, "thresholds", "threshold_out_of_range"),
    ({"amount_usd": "100", "thresholds": [50, 120]}, "thresholds", "threshold_out_of_range"),
    ({"amount_usd": "100", "thresholds": [80, 80]}, "thresholds", "threshold_duplicated"),
    ({"amount_usd": "100", "month": "2020-01"}, "month", "month_in_past"),
    ({"amount_usd": "100", "month": "next"}, "month", "invalid_month"),
])
def test_budget_bad_input_same_code_on_every_face(data, field, code, cast, token_for):
    from spending.models import Budget

    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()
    rest = Client().put(f"/api/v1/teams/{cast.team.pk}/budget", data, content_type="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "set_team_budget", {"team_id": cast.team.pk, **data})
    browser = Client()
    browser.force_login(cast.admin)
    form = {**data, "thresholds": ", ".join(str(value) for value in data.get("thresholds", [50, 80, 100]))}
    portal = browser.post(reverse("spending-budget"), form)

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert {"validation_failed", code} <= portal_codes(portal)
    assert not Budget.objects.exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(("resource", "body", "field", "code"), [
    ({"instance_type": "ml.g5.8xlarge", "count": -1}, {}, "resources[0].count", "quota_negative"),
    ({"instance_type": "ml.g5.8xlarge", "count": 3}, {}, "resources[0].count", "quota_above_capacity"),
    ({"instance_type": "ml.p5.48xlarge", "count": 1}, {}, "resources[0].instance_type",
     "instance_type_not_in_cluster"),
    ({"instance_type": "ml.g5.8xlarge", "count": 1}, {"strategy": "DontLend", "borrow_limit": 50}, "borrow_limit",
     "borrow_limit_without_borrowing"),
])
def test_compute_quota_bad_input_same_code_on_every_face(resource, body, field, code, cast, token_for):
    from governance.models import ComputeQuota
    from tests.governance.rows import governed_cluster

    cluster = governed_cluster(cast.team)
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()
    data = {"cluster": cluster.pk, "team": cast.team.pk, "resources": [resource], **body}
    rest = Client().post("/api/v1/compute-quotas", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "create_compute_quota", data)
    browser = Client()
    browser.force_login(cast.admin)
    form = {"team": cast.team.pk, **body, **{f"resources-0-{name}": value for name, value in resource.items()}}
    portal = browser.post(reverse("cluster-quota-create", args=[cluster.pk]), form)

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {field: code}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert portal_codes(portal) == {"validation_failed", code}
    assert not ComputeQuota.objects.exists()
    assert AuditEvent.objects.count() == events


def test_job_priority_the_scheduler_config_does_not_define_same_code_on_every_face(cast, token_for, sandbox):
    from cloud import aws
    from clusters.shared_bucket import ensure_shared_bucket, team_prefix
    from tests.governance.rows import governed_cluster
    from training.models import TrainingJob

    cluster = governed_cluster(cast.team)
    s3 = aws.client("s3", region=cluster.region)
    s3.put_object(Bucket=ensure_shared_bucket(s3, cluster.region), Key=f"{team_prefix(cast.team.slug)}train.py",
                  Body=b"print('training')\n")
    secret = token_for(cast.operator)
    events = AuditEvent.objects.count()
    data = {"cluster": cluster.pk, "recipe": "pytorch", "name": "urgent", "priority": "urgent",
            "config": {"script": "train.py"}}
    rest = Client().post("/api/v1/training-jobs", data, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "submit_training_job", data)
    browser = Client()
    browser.force_login(cast.operator)
    portal = browser.post(reverse("training-job-submit"), {"cluster": cluster.pk, "recipe": "pytorch",
                                                           "name": "urgent", "priority": "urgent",
                                                           "cfg-script": "train.py"})

    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {
        "priority": "unknown_priority_class"}
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400
    assert portal_codes(portal) == {"validation_failed", "unknown_priority_class"}
    assert not TrainingJob.objects.exists()
    assert AuditEvent.objects.count() == events


def test_compute_quotas_hold_task_governance_and_the_cluster_alike_on_every_face(cast, token_for, make_team):
    from governance.models import ComputeQuota
    from operations.models import ApprovalPolicy, Operation
    from tests.governance.rows import governed_cluster

    cluster = governed_cluster(cast.team)
    factories.compute_quota(cluster, make_team("Robotics"))
    ApprovalPolicy.objects.create(team=cast.team, actions=[])  # the agent's delete is not held for approval
    secret = token_for(cast.admin)
    events = AuditEvent.objects.count()
    browser = Client()
    browser.force_login(cast.admin)

    off = {"task_governance": {"enabled": False}}
    rest = Client().patch(f"/api/v1/clusters/{cluster.pk}/features", off, content_type="application/json",
                          HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "update_advanced_features", {"cluster_id": cluster.pk, **off})
    portal = browser.post(reverse("cluster-features", args=[cluster.pk]), off, content_type="application/json")
    assert rest.status_code == 400, rest.content
    assert {name: errors[0]["code"] for name, errors in rest.json()["fields"].items()} == {
        "task_governance": "feature_in_use"}
    assert "the compute quota of team robotics" in rest.json()["fields"]["task_governance"][0]["message"]
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 400 and "feature_in_use" in portal_codes(portal)

    confirm = {"confirm": cluster.name}
    rest = Client().post(f"/api/v1/clusters/{cluster.pk}/delete", confirm, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {secret}")
    is_error, mcp_body = call_tool(secret, "delete_cluster", {"cluster_id": cluster.pk, **confirm})
    portal = browser.post(reverse("cluster-delete", args=[cluster.pk]), confirm)
    assert (rest.status_code, rest.json()["code"]) == (409, "cluster_has_dependents"), rest.content
    assert "the compute quota of team robotics" in rest.json()["message"]
    assert is_error and mcp_body == rest.json()
    assert portal.status_code == 409 and "cluster_has_dependents" in portal_codes(portal)

    cluster.refresh_from_db()
    assert cluster.state == "active" and ComputeQuota.objects.count() == 1
    assert not Operation.objects.exists() and AuditEvent.objects.count() == events
