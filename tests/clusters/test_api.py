"""The clusters REST face: create (preflight before anything), delete and forget, the active cluster, volumes, and
the MCP tools' active-cluster default. The pipelines themselves are proven in the phase tests and test_pipeline."""

from __future__ import annotations

import httpx
import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent
from clusters import usage
from clusters.models import ActiveCluster, Cluster, ClusterState, StorageState, StorageVolume
from mcp_server.testing import call_tool
from operations.models import Operation
from tests.clusters.sandbox import make_eks_cluster

CREATE = {"name": "alpha", "region": "us-west-2", "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
          "instance_count": 1}


def mutations(sandbox) -> list[dict]:
    """Every mutating call the sandbox received (effective or not)."""
    return httpx.get(f"{sandbox.aws_url}/_sandbox/requests").json()["requests"]


def field_codes(response) -> dict[str, list[str]]:
    return {field: [error["code"] for error in errors] for field, errors in response.json()["fields"].items()}


@pytest.fixture
def admin_api(api, cast):
    return api(cast.admin)


def test_create_starts_the_six_phase_operation_and_audits(admin_api, cast, sandbox):
    response = admin_api.post("/api/v1/clusters", {**CREATE, "team": cast.team.pk})
    assert response.status_code == 202, response.content
    body = response.json()
    cluster = Cluster.objects.get(pk=body["cluster"]["id"])
    assert (cluster.state, cluster.origin, cluster.eks_name) == ("creating", "created", "alpha")
    assert cluster.spec["instance_type"] == "ml.g5.8xlarge"
    assert [phase["slug"] for phase in body["operation"]["phases"]] == [
        "network", "eks", "system-nodes", "activate", "dependencies", "hyperpod", "storage"]
    assert body["operation"]["params"]["cluster_id"] == cluster.pk
    assert AuditEvent.objects.filter(action="cluster.create", target_id=str(cluster.pk)).exists()
    assert mutations(sandbox) == []


def test_create_with_an_idempotency_key_replays_the_first_cluster(admin_api, cast, sandbox):
    first = admin_api.post("/api/v1/clusters", CREATE, HTTP_IDEMPOTENCY_KEY="k-1")
    again = admin_api.post("/api/v1/clusters", CREATE, HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 202
    assert again.json()["operation"]["id"] == first.json()["operation"]["id"]
    assert Cluster.objects.count() == 1


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"name": "bad_name"}, "name", "invalid_cluster_name"),
    ({"name": "-starts-with-hyphen"}, "name", "invalid_cluster_name"),
    ({"name": "x" * 64}, "name", "invalid_cluster_name"),
    ({"region": "mars-1"}, "region", "unknown_region"),
    ({"instance_count": 0}, "instance_count", "invalid_count"),
    ({"capacity_type": "training-plan"}, "training_plan_arn", "training_plan_required"),
    ({"fsx_capacity_gib": 1000}, "fsx_capacity_gib", "invalid_capacity"),
    ({"surprise": 1}, "surprise", "unknown_field"),
])
def test_malformed_create_is_refused_by_field_and_creates_nothing(admin_api, sandbox, change, field, code):
    response = admin_api.post("/api/v1/clusters", {**CREATE, **change})
    assert response.status_code == 400, response.content
    assert code in field_codes(response)[field]
    assert not Cluster.objects.exists() and not Operation.objects.exists()
    assert mutations(sandbox) == []


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"zone": "us-west-2z"}, "zone", "unknown_zone"),
    ({"region": "ap-nowhere-9"}, "region", "unknown_region"),
    ({"instance_type": "ml.x9.huge"}, "instance_type", "instance_type_not_allowed"),
    ({"instance_type": "ml.p5.48xlarge", "instance_count": 40}, "instance_count", "quota_exceeded"),
])
def test_preflight_refusals_create_nothing(admin_api, sandbox, change, field, code):
    response = admin_api.post("/api/v1/clusters", {**CREATE, **change})
    assert response.status_code == 400, response.content
    assert code in field_codes(response)[field]
    assert not Cluster.objects.exists() and not Operation.objects.exists()
    assert mutations(sandbox) == []


def test_quota_refusal_names_the_numbers(admin_api, sandbox):
    response = admin_api.post("/api/v1/clusters", {**CREATE, "instance_type": "ml.p5.48xlarge",
                                                   "instance_count": 40})
    message = response.json()["fields"]["instance_count"][0]["message"]
    assert "ml.p5.48xlarge" in message and "40" in message


def test_preflight_endpoint_checks_without_creating(admin_api, sandbox):
    response = admin_api.post("/api/v1/clusters/preflight", CREATE)
    assert response.status_code == 200, response.content
    checks = response.json()["checks"]
    assert checks["zone"] == "us-west-2a" and checks["zone_id"]
    assert not Cluster.objects.exists()


def test_the_preflight_over_mcp_is_create_cluster_as_a_dry_run(cast, token_for, admin_api, sandbox):
    cast.admin.current_team = cast.team
    cast.admin.save()
    secret = token_for(cast.admin)
    bad = {**CREATE, "zone": "us-west-2z"}
    is_error, body = call_tool(secret, "create_cluster", {**bad, "dry_run": True})
    assert is_error and body["fields"] == admin_api.post("/api/v1/clusters/preflight", bad).json()["fields"]
    is_error, plan = call_tool(secret, "create_cluster", {**CREATE, "dry_run": True})
    assert not is_error and plan["dry_run"] is True, plan
    assert not Cluster.objects.exists() and not Operation.objects.exists()


def test_name_taken_in_the_team(admin_api, make_cluster, sandbox):
    make_cluster("alpha", state=ClusterState.ACTIVE)
    response = admin_api.post("/api/v1/clusters", CREATE)
    assert response.status_code == 400
    assert field_codes(response)["name"] == ["cluster_name_taken"]
    assert Operation.objects.count() == 0


def test_a_deleted_clusters_name_is_free_again(admin_api, make_cluster, sandbox):
    make_cluster("alpha", state=ClusterState.DELETED)
    assert admin_api.post("/api/v1/clusters", CREATE).status_code == 202


def test_operators_may_not_create_and_outsiders_do_not_see_the_team(api, cast, sandbox):
    assert api(cast.operator).post("/api/v1/clusters", {**CREATE, "team": cast.team.pk}).status_code == 403
    assert api(cast.outsider).post("/api/v1/clusters", {**CREATE, "team": cast.team.pk}).status_code == 404
    assert not Cluster.objects.exists()


# delete -----------------------------------------------------------------------------------------------------------


def test_delete_needs_the_typed_name(admin_api, make_cluster):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    response = admin_api.post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpah"})
    assert response.status_code == 400
    assert field_codes(response) == {"confirm": ["confirmation_mismatch"]}
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE and not Operation.objects.exists()


def test_delete_of_a_created_cluster_starts_the_reverse_pipeline(admin_api, make_cluster):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    response = admin_api.post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpha"})
    assert response.status_code == 202, response.content
    assert [phase["slug"] for phase in response.json()["operation"]["phases"]] == [
        "storage", "hyperpod", "dependencies", "system-nodes", "eks", "network"]
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.DELETING


def test_an_imported_cluster_is_only_forgotten(admin_api, make_cluster, cast, sandbox):
    cluster = make_cluster(state=ClusterState.ACTIVE, origin="imported")
    ActiveCluster.objects.create(user=cast.admin, team=cast.team, cluster=cluster)
    response = admin_api.post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpha"})
    assert response.status_code == 200, response.content
    assert response.json()["operation"] is None
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.DELETED and cluster.deleted_at is not None
    assert not ActiveCluster.objects.exists()
    assert AuditEvent.objects.filter(action="cluster.forget").exists()
    assert mutations(sandbox) == []


def test_a_busy_cluster_cannot_be_deleted(admin_api, make_cluster):
    cluster = make_cluster(state=ClusterState.CREATING)
    response = admin_api.post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpha"})
    assert response.status_code == 409
    assert response.json()["code"] == "cluster_busy"


def test_a_cluster_with_running_work_cannot_be_deleted_and_the_work_is_listed(admin_api, make_cluster):
    cluster = make_cluster(state=ClusterState.ACTIVE)

    def jobs(target: Cluster) -> list[str]:
        return ["training job llama-sft (running)"] if target.pk == cluster.pk else []

    usage.register_workload_source(jobs)
    try:
        response = admin_api.post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": "alpha"})
    finally:
        usage.unregister_workload_source(jobs)
    assert response.status_code == 409
    assert response.json()["code"] == "cluster_in_use"
    assert "llama-sft" in response.json()["message"]
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE


def test_another_teams_cluster_is_not_found(api, make_cluster, make_team, cast):
    other = make_cluster("theirs", team=make_team("Other"), state=ClusterState.ACTIVE)
    client = api(cast.admin)
    assert client.get(f"/api/v1/clusters/{other.pk}").status_code == 404
    response = client.post(f"/api/v1/clusters/{other.pk}/delete", {"confirm": "theirs"})
    assert response.status_code == 404
    other.refresh_from_db()
    assert other.state == ClusterState.ACTIVE


# import -----------------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("import_allowed")
def test_import_refuses_an_unknown_cluster_and_one_already_tracked(admin_api, make_cluster, sandbox):
    response = admin_api.post("/api/v1/clusters/import", {"region": "us-west-2", "eks_name": "nowhere"})
    assert response.status_code in (400, 404)
    assert not Cluster.objects.exists()
    outside = make_eks_cluster("outside")
    tracked = make_cluster("tracked", state=ClusterState.ACTIVE)
    Cluster.objects.filter(pk=tracked.pk).update(eks_name=outside.name)
    response = admin_api.post("/api/v1/clusters/import", {"region": "us-west-2", "eks_name": outside.name})
    assert response.status_code == 400
    assert field_codes(response) == {"eks_name": ["cluster_already_tracked"]}


# the active cluster -----------------------------------------------------------------------------------------------


def test_the_active_cluster_is_per_user(api, make_cluster, cast):
    first, second = make_cluster("first", state=ClusterState.ACTIVE), make_cluster("second", state=ClusterState.ACTIVE)
    assert api(cast.viewer).request("PUT", "/api/v1/active-cluster", {"cluster": first.pk}).status_code == 200
    assert api(cast.operator).request("PUT", "/api/v1/active-cluster", {"cluster": second.pk}).status_code == 200
    assert api(cast.viewer).get("/api/v1/active-cluster", team=cast.team.pk).json()["cluster"]["id"] == first.pk
    assert api(cast.operator).get("/api/v1/active-cluster", team=cast.team.pk).json()["cluster"]["id"] == second.pk
    assert api(cast.admin).get("/api/v1/active-cluster", team=cast.team.pk).json()["cluster"] is None
    assert api(cast.viewer).get(f"/api/v1/clusters/{first.pk}").json()["active"] is True
    assert api(cast.operator).get(f"/api/v1/clusters/{first.pk}").json()["active"] is False


def test_mcp_cluster_tools_default_to_the_active_cluster(cast, token_for, make_cluster, api):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    secret = token_for(cast.viewer)
    is_error, body = call_tool(secret, "get_cluster", {})
    assert is_error and body["fields"]["cluster_id"][0]["code"] == "no_active_cluster"
    cast.viewer.current_team = cast.team
    cast.viewer.save()
    is_error, body = call_tool(secret, "set_active_cluster", {"cluster": cluster.pk})
    assert not is_error, body
    is_error, body = call_tool(secret, "get_cluster", {})
    assert not is_error and body["id"] == cluster.pk and body["active"] is True


# volumes ----------------------------------------------------------------------------------------------------------


def test_volumes_are_added_to_active_clusters_only(api, make_cluster, cast):
    cluster = make_cluster(state=ClusterState.CREATING)
    response = api(cast.operator).post(f"/api/v1/clusters/{cluster.pk}/volumes",
                                       {"name": "data", "kind": "s3", "bucket": "team-data"})
    assert response.status_code == 409 and response.json()["code"] == "cluster_not_active"
    assert not StorageVolume.objects.exists()


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"name": "Data", "kind": "s3", "bucket": "team-data"}, "name", "invalid_volume_name"),
    ({"name": "data", "kind": "s3"}, "bucket", "required"),
    ({"name": "data", "kind": "fsx"}, "capacity_gib", "required"),
    ({"name": "data", "kind": "fsx", "capacity_gib": 100}, "capacity_gib", "invalid_capacity"),
    ({"name": "data", "kind": "fsx", "capacity_gib": 2_400_000_000_000}, "capacity_gib", "max_value"),
    ({"name": "data", "kind": "fsx", "capacity_gib": 103_200}, "capacity_gib", "max_value"),
    ({"name": "data", "kind": "efs"}, "kind", "invalid_choice"),
])
def test_bad_volume_input_is_refused_by_field(api, make_cluster, cast, body, field, code):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    response = api(cast.operator).post(f"/api/v1/clusters/{cluster.pk}/volumes", body)
    assert response.status_code == 400, response.content
    assert code in field_codes(response)[field]
    assert not StorageVolume.objects.exists() and not Operation.objects.exists()


SHARED = "instantstart-shared-123456789012-us-west-2"


@pytest.mark.parametrize("prefix", ["", "teams/", "teams/speech/", "teams/visionary/", "teams/vision/../speech/",
                                    "clusters/1/lifecycle/", "/teams/vision/"])
def test_a_volume_of_the_shared_bucket_mounts_only_the_teams_own_folder(api, make_cluster, cast, monkeypatch,
                                                                       token_for, prefix):
    monkeypatch.setenv("INSTANTSTART_SHARED_BUCKET", SHARED)
    cluster = make_cluster(state=ClusterState.ACTIVE)
    body = {"name": "data", "kind": "s3", "bucket": SHARED, "prefix": prefix}
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/volumes", body)
    assert response.status_code == 400, response.content
    assert field_codes(response) == {"prefix": ["path_outside_shared_bucket"]}
    is_error, answer = call_tool(token_for(cast.admin), "create_cluster_volume", {"cluster_id": cluster.pk, **body})
    assert is_error and answer["fields"]["prefix"][0]["code"] == "path_outside_shared_bucket"
    portal = Client()
    portal.force_login(cast.admin)
    page = portal.post(reverse("cluster-volume-create", args=[cluster.pk]), {**body, "capacity_gib": ""})
    assert page.status_code == 400 and "path_outside_shared_bucket" in page.content.decode()
    assert not StorageVolume.objects.exists() and not Operation.objects.exists()


def test_a_volume_of_the_teams_own_folder_of_the_shared_bucket_is_added(api, make_cluster, cast, monkeypatch):
    monkeypatch.setenv("INSTANTSTART_SHARED_BUCKET", SHARED)
    cluster = make_cluster(state=ClusterState.ACTIVE)
    for name, prefix in (("own", "teams/vision"), ("data", "teams/vision/datasets/")):
        response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/volumes",
                                        {"name": name, "kind": "s3", "bucket": SHARED, "prefix": prefix})
        assert response.status_code == 202, response.content


def test_volume_create_and_delete_start_operations(api, make_cluster, cast):
    cluster = make_cluster(state=ClusterState.ACTIVE)
    client = api(cast.operator)
    response = client.post(f"/api/v1/clusters/{cluster.pk}/volumes",
                           {"name": "data", "kind": "s3", "bucket": "team-data", "prefix": "datasets/"})
    assert response.status_code == 202, response.content
    volume = StorageVolume.objects.get(pk=response.json()["volume"]["id"])
    assert (volume.namespace, volume.pvc_name, volume.team_id) == (f"team-{cast.team.slug}", "data", cast.team.pk)
    again = client.post(f"/api/v1/clusters/{cluster.pk}/volumes", {"name": "data", "kind": "s3", "bucket": "x-y"})
    assert field_codes(again) == {"name": ["volume_name_taken"]}
    assert client.delete(f"/api/v1/clusters/{cluster.pk}/volumes/{volume.pk}").json()["code"] == "volume_busy"
    StorageVolume.objects.filter(pk=volume.pk).update(state=StorageState.AVAILABLE)
    response = client.delete(f"/api/v1/clusters/{cluster.pk}/volumes/{volume.pk}")
    assert response.status_code == 202, response.content
    volume.refresh_from_db()
    assert volume.state == StorageState.DELETING
    assert api(cast.viewer).delete(f"/api/v1/clusters/{cluster.pk}/volumes/{volume.pk}").status_code == 403


def test_the_clusters_list_costs_the_same_queries_for_two_or_twenty(api, make_cluster, cast):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api(cast.viewer)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/api/v1/clusters").status_code == 200
        return len(captured)

    for index in range(2):
        make_cluster(f"c{index}", state=ClusterState.ACTIVE)
    queries()  # the first request also loads the token and the actor's roles
    few = queries()
    for index in range(2, 20):
        make_cluster(f"c{index}", state=ClusterState.ACTIVE)
    assert queries() == few
