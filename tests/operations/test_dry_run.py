"""Dry-run plans through REST (``?dry_run=true``): what the main changes would create, change or delete, refusals
as the real call answers them, and no idempotency key used. That a dry run of every mutating tool changes nothing
is tests/mcp_server/test_dry_run.py."""

from __future__ import annotations

import httpx
import pytest

from accounts.models import AuditEvent
from clusters.models import Cluster, ClusterDependency, ClusterState, InstanceGroup, NetworkPlan, Subnet
from inference.models import Endpoint
from operations.models import Operation
from tests import factories
from tests.clusters.sandbox import tracked_hyperpod_cluster
from tests.clusters.test_api import CREATE
from tests.training.sandbox import training_cluster
from training.models import TrainingJob


def aws_writes(sandbox) -> list[dict]:
    return httpx.get(f"{sandbox.aws_url}/_sandbox/requests").json()["requests"]


def kube_writes(sandbox) -> list[dict]:
    return httpx.get(f"{sandbox.aws_url}/_sandbox/kube-requests").json()["requests"]


def changed(plan: dict, action: str, kind: str) -> list[dict]:
    return [item for item in plan["changes"] if item["action"] == action and item["kind"] == kind]


def test_a_cluster_create_plan_has_the_phases_and_the_vpc_eks_and_hyperpod_it_would_create(api, cast, sandbox):
    admin = api(cast.admin)
    audited = AuditEvent.objects.count()
    body = {**CREATE, "team": cast.team.pk, "fsx_capacity_gib": 1200}
    response = admin.post("/api/v1/clusters?dry_run=true", body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["dry_run"] is True and plan["summary"].startswith("DRY RUN, nothing was changed.")
    assert plan["operation"]["kind"] == "cluster.create"
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == [
        "network", "eks", "system-nodes", "activate", "dependencies", "hyperpod", "storage"]
    assert all(phase["changes"] for phase in plan["operation"]["phases"])
    assert len(changed(plan, "create", "EC2 VPC")) == 1 and len(changed(plan, "create", "EC2 subnet")) == 5
    assert changed(plan, "create", "EKS cluster")[0]["name"] == "alpha"
    [hyperpod] = changed(plan, "create", "SageMaker HyperPod cluster")
    assert hyperpod["detail"]["node_recovery"] == "Automatic"
    assert hyperpod["detail"]["instance_groups"][0]["instance_type"] == "ml.g5.8xlarge"
    assert changed(plan, "create", "FSx for Lustre file system")[0]["detail"]["capacity_gib"] == 1200
    assert not Cluster.objects.exists() and not Operation.objects.exists()
    assert AuditEvent.objects.count() == audited
    assert aws_writes(sandbox) == []
    real = admin.post("/api/v1/clusters", body, HTTP_IDEMPOTENCY_KEY="k-1")
    assert real.status_code == 202 and real.headers.get("Idempotent-Replayed") is None


def test_a_dry_run_is_refused_as_the_real_call_would_be(api, cast, sandbox):
    as_viewer = api(cast.viewer).post("/api/v1/clusters?dry_run=true", {**CREATE, "team": cast.team.pk})
    assert (as_viewer.status_code, as_viewer.json()["code"]) == (403, "permission_denied")
    bad = api(cast.admin).post("/api/v1/clusters?dry_run=true", {**CREATE, "name": "bad_name"})
    assert bad.status_code == 400 and bad.json()["fields"]["name"][0]["code"] == "invalid_cluster_name"
    unclear = api(cast.admin).post("/api/v1/clusters?dry_run=maybe", {**CREATE, "team": cast.team.pk})
    assert unclear.status_code == 400 and unclear.json()["fields"]["dry_run"][0]["code"] == "invalid"
    assert not Cluster.objects.exists() and aws_writes(sandbox) == []


def test_a_cluster_delete_plan_names_what_would_be_deleted(api, cast):
    cluster = factories.cluster(cast.team, "alpha", state=ClusterState.ACTIVE, hyperpod_name="alpha")
    network = NetworkPlan.objects.create(cluster=cluster, vpc_id="vpc-1", vpc_cidr="10.1.0.0/16",
                                         nat_gateway_id="nat-1", internet_gateway_id="igw-1",
                                         route_tables={"public": "rtb-1"}, security_groups={"cluster": "sg-1"})
    Subnet.objects.create(network=network, role="public", zone="us-west-2a", zone_id="usw2-az1", cidr="10.1.0.0/22",
                          subnet_id="subnet-1")
    factories.storage_volume(cluster, "shared", state="available", pv_name="pv-shared", pvc_name="shared")
    ClusterDependency.objects.create(cluster=cluster, component="cert-manager", kind="addon", observed_state="active")
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/delete?dry_run=true", {"confirm": "alpha"})
    assert response.status_code == 200, response.content
    plan = response.json()
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == [
        "storage", "hyperpod", "dependencies", "system-nodes", "eks", "network"]
    deleted = {(item["kind"], item["name"]) for item in plan["changes"] if item["action"] == "delete"}
    assert {("EC2 VPC", "vpc-1"), ("EC2 subnet", "subnet-1"), ("EC2 NAT gateway", "nat-1"), ("EKS cluster", "alpha"),
            ("SageMaker HyperPod cluster", "alpha"), ("PersistentVolume", "pv-shared"),
            ("EKS add-on", "cert-manager")} <= deleted
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE and not Operation.objects.exists()


def test_an_instance_group_add_plan_names_the_group_it_would_add(api, cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    groups, aws_seen = InstanceGroup.objects.count(), len(aws_writes(sandbox))
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/instance-groups?dry_run=true",
                                       {"name": "extra", "instance_type": "ml.g5.8xlarge", "instance_count": 2,
                                        "zone": "us-west-2a"})
    assert response.status_code == 200, response.content
    plan = response.json()
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == ["placement", "hyperpod", "autoscaling"]
    [update] = changed(plan, "update", "SageMaker HyperPod cluster")
    assert update["detail"]["adds_instance_group"]["name"] == "extra"
    assert update["detail"]["adds_instance_group"]["instance_count"] == 2
    assert InstanceGroup.objects.count() == groups and len(aws_writes(sandbox)) == aws_seen


@pytest.mark.django_db(transaction=True)
def test_training_job_and_endpoint_plans_carry_the_manifests_they_would_apply(api, cast, sandbox):
    cluster = training_cluster(cast.team, count=1, ray=False)
    kube_seen = max((entry["seq"] for entry in kube_writes(sandbox)), default=0)
    operator = api(cast.operator)
    submitted = operator.post("/api/v1/training-jobs?dry_run=true", {
        "cluster": cluster.pk, "recipe": "pytorch", "name": "preview",
        "config": {"script": "train.py", "replicas": 1, "gpus_per_node": 1}})
    assert submitted.status_code == 200, submitted.content
    [job] = changed(submitted.json(), "create", "HyperPodPyTorchJob")
    assert job["detail"]["manifest"]["kind"] == "HyperPodPyTorchJob"
    assert job["detail"]["manifest"]["metadata"]["name"] == "preview"
    deployed = operator.post("/api/v1/endpoints?dry_run=true",
                             {"cluster": cluster.pk, "name": "chat", "model": "models/m", "gpus": 1})
    assert deployed.status_code == 200, deployed.content
    plan = deployed.json()
    assert [phase["slug"] for phase in plan["operation"]["phases"]] == ["create", "rollout", "expose"]
    assert changed(plan, "create", "Deployment")[0]["detail"]["manifest"]["kind"] == "Deployment"
    assert changed(plan, "create", "Service")[0]["name"].endswith("/chat")
    assert not TrainingJob.objects.exists() and not Endpoint.objects.exists()
    assert [entry for entry in kube_writes(sandbox) if entry["seq"] > kube_seen] == []


def test_a_change_of_instantstart_records_alone_plans_the_audited_change(api, cast):
    response = api(cast.admin).patch(f"/api/v1/teams/{cast.team.pk}?dry_run=true", {"description": "previewed"})
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["operation"] is None
    [record] = plan["changes"]
    assert (record["action"], record["provider"], record["kind"]) == ("update", "instantstart", "team.update")
    assert record["detail"]["after"]["description"] == "previewed"
    cast.team.refresh_from_db()
    assert cast.team.description != "previewed"
