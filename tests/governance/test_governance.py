"""Task governance on the sandbox with the real clients: the task_governance feature, the scheduler config created
(failing without the add-on, then retried) and updated, two teams' compute quotas (with the refusals that leave nothing
behind), a quota changed and deleted, and a job submitted on the governed cluster going to its team's queue with a
priority."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from cloud import aws
from clusters.models import ClusterFeature
from governance.models import ComputeQuota, SchedulerConfig
from mcp_server.testing import call_tool
from operations.models import Operation
from tests.training.sandbox import training_cluster

QUOTAS = "/api/v1/compute-quotas"
CLASSES = [{"name": "inference", "weight": 100}, {"name": "training", "weight": 50}]


def run(drive, response) -> Operation:
    assert response.status_code == 202, response.content
    operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=60)
    assert operation.state == "succeeded", (operation.phase, operation.error_code, operation.error_message)
    return operation


def field_codes(response) -> dict[str, str]:
    return {name: items[0]["code"] for name, items in response.json()["fields"].items()}


@pytest.mark.django_db(transaction=True)
def test_two_teams_get_quotas_on_a_governed_cluster_and_jobs_go_to_their_queue(api, cast, make_team, sandbox, drive,
                                                                              token_for):
    cluster = training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=2, ray=False)
    admin = api(cast.admin)
    config_path = f"/api/v1/clusters/{cluster.pk}/scheduler-config"

    refused = admin.request("PUT", config_path, {"priority_classes": CLASSES, "fair_share": True})
    assert (refused.status_code, refused.json()["code"]) == (409, "task_governance_off")
    ClusterFeature.objects.create(cluster=cluster, feature="task_governance", state="enabled")  # seen, then removed
    plan = admin.request("PUT", f"{config_path}?dry_run=true", {"priority_classes": CLASSES, "fair_share": True})
    assert plan.status_code == 200, plan.content
    [change] = plan.json()["changes"]
    assert change["detail"]["call"] == "sagemaker:CreateClusterSchedulerConfig"
    assert change["detail"]["request"]["SchedulerConfig"] == {
        "PriorityClasses": [{"Name": "inference", "Weight": 100}, {"Name": "training", "Weight": 50}],
        "FairShare": "Enabled"}
    assert not SchedulerConfig.objects.exists()
    response = admin.request("PUT", config_path, {"priority_classes": CLASSES, "fair_share": True})
    failed = drive(Operation.objects.get(pk=response.json()["operation"]["id"]))
    assert (failed.state, failed.error_code) == ("failed", "governance_failed")
    assert SchedulerConfig.objects.get(cluster=cluster).state == "failed"

    run(drive, admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": True}}))
    addon = aws.client("eks", region=cluster.region).describe_addon(
        clusterName=cluster.eks_name, addonName="amazon-sagemaker-hyperpod-taskgovernance")["addon"]
    assert addon["status"] == "ACTIVE" and addon["tags"]["instantstart:cluster-id"] == str(cluster.pk)
    assert api(cast.operator).post(f"/api/v1/operations/{failed.pk}/retry", {}).status_code == 202
    assert drive(failed).state == "succeeded"  # the CreateFailed config updated once more, now with the add-on
    config = SchedulerConfig.objects.get(cluster=cluster)
    assert (config.state, config.status, config.version) == ("ready", "Updated", 2)
    again = admin.request("PUT", config_path, {"priority_classes": CLASSES, "fair_share": True})
    assert (again.status_code, again.json()["operation"]) == (200, None)
    run(drive, admin.request("PUT", config_path, {"priority_classes": [*CLASSES, {"name": "batch", "weight": 10}],
                                       "fair_share": False}))
    config.refresh_from_db()
    described = aws.client("sagemaker", region=cluster.region).describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=config.config_id)
    assert (described["Status"], described["ClusterSchedulerConfigVersion"], config.version) == ("Updated", 3, 3)
    assert described["SchedulerConfig"]["FairShare"] == "Disabled"
    assert [item["Name"] for item in described["SchedulerConfig"]["PriorityClasses"]] == [
        "inference", "training", "batch"]

    other = make_team("Robotics")
    written = (ComputeQuota.objects.count(), Operation.objects.count(), AuditEvent.objects.count())
    for body, codes in [
        ({"resources": [{"instance_type": "ml.g5.12xlarge", "count": -1}]}, {"resources[0].count": "quota_negative"}),
        ({"resources": [{"instance_type": "ml.g5.12xlarge", "count": 3}]},
         {"resources[0].count": "quota_above_capacity"}),
        ({"resources": [{"instance_type": "ml.g5.12xlarge", "accelerators": 9}]},
         {"resources[0].accelerators": "quota_above_capacity"}),
        ({"resources": [{"instance_type": "ml.p5.48xlarge", "count": 1}]},
         {"resources[0].instance_type": "instance_type_not_in_cluster"}),
        ({"resources": [{"instance_type": "ml.nope.xlarge", "count": 1}]},
         {"resources[0].instance_type": "unknown_instance_type"}),
        ({"resources": [], "strategy": "DontLend", "borrow_limit": 50},
         {"borrow_limit": "borrow_limit_without_borrowing"}),
    ]:
        response = admin.post(QUOTAS, {"cluster": cluster.pk, "team": other.pk, **body})
        assert response.status_code == 400 and field_codes(response) == codes, response.content
    assert (ComputeQuota.objects.count(), Operation.objects.count(), AuditEvent.objects.count()) == written

    run(drive, admin.post(QUOTAS, {"cluster": cluster.pk, "team": cast.team.pk, "fair_share_weight": 60,
                                   "resources": [{"instance_type": "ml.g5.12xlarge", "count": 1}]}))
    secret = token_for(cast.admin)
    is_error, created = call_tool(secret, "create_compute_quota", {
        "cluster": cluster.pk, "team": other.pk, "strategy": "LendAndBorrow", "borrow_limit": 100,
        "resources": [{"instance_type": "ml.g5.12xlarge", "accelerators": 4}]})
    assert not is_error, created
    drive(Operation.objects.get(pk=created["operation"]["id"]))
    full = admin.post(QUOTAS, {"cluster": cluster.pk, "team": make_team("Speech Lab").pk,
                               "resources": [{"instance_type": "ml.g5.12xlarge", "count": 1}]})
    assert field_codes(full) == {"resources[0].count": "quota_above_capacity"}

    sagemaker = aws.client("sagemaker", region=cluster.region)
    listed = {item["ComputeQuotaTarget"]["TeamName"]: item for item in sagemaker.list_compute_quotas(
        ClusterArn=cluster.hyperpod_arn)["ComputeQuotaSummaries"]}
    assert set(listed) == {cast.team.slug, other.slug}
    assert listed[other.slug]["ComputeQuotaConfig"]["ResourceSharingConfig"] == {
        "Strategy": "LendAndBorrow", "BorrowLimit": 100}
    mine = ComputeQuota.objects.get(cluster=cluster, for_team=cast.team)
    assert (mine.state, mine.status) == ("ready", "Created")
    shown = admin.get(f"/api/v1/clusters/{cluster.pk}/governance").json()
    assert shown["task_governance"] == "enabled" and shown["capacity"] == {"ml.g5.12xlarge": 2}
    assert {item["queue"] for item in shown["quotas"]} == {f"hyperpod-ns-{cast.team.slug}-localqueue",
                                                          f"hyperpod-ns-{other.slug}-localqueue"}

    same = admin.patch(f"{QUOTAS}/{mine.pk}", {"fair_share_weight": 60})
    assert (same.status_code, same.json()["operation"]) == (200, None)
    run(drive, admin.patch(f"{QUOTAS}/{mine.pk}", {"fair_share_weight": 80, "preempt_team_tasks": "Never"}))
    quota = sagemaker.describe_compute_quota(ComputeQuotaId=mine.quota_id)
    assert (quota["Status"], quota["ComputeQuotaVersion"]) == ("Updated", 2)
    assert quota["ComputeQuotaTarget"]["FairShareWeight"] == 80

    job = api(cast.operator).post("/api/v1/training-jobs?dry_run=true", {
        "cluster": cluster.pk, "recipe": "pytorch", "name": "queued", "priority": "training",
        "config": {"script": "train.py"}})
    assert job.status_code == 200, job.content
    manifest = next(change["detail"]["manifest"] for change in job.json()["changes"]
                    if change["kind"] == "HyperPodPyTorchJob")
    assert manifest["metadata"]["namespace"] == f"hyperpod-ns-{cast.team.slug}"
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == f"hyperpod-ns-{cast.team.slug}-localqueue"
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "training-priority"
    unknown = api(cast.operator).post("/api/v1/training-jobs", {
        "cluster": cluster.pk, "recipe": "pytorch", "priority": "urgent", "config": {"script": "train.py"}})
    assert field_codes(unknown) == {"priority": "unknown_priority_class"}

    theirs = ComputeQuota.objects.get(cluster=cluster, for_team=other)
    run(drive, admin.delete(f"{QUOTAS}/{theirs.pk}"))
    assert not ComputeQuota.objects.filter(pk=theirs.pk).exists()
    assert sagemaker.describe_compute_quota(ComputeQuotaId=theirs.quota_id)["Status"] == "Deleted"

    # task governance stays on while the cluster has a quota or a scheduler config; once they are gone, it turns off
    off = admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": False}})
    assert field_codes(off) == {"task_governance": "feature_in_use"}
    assert f"the compute quota of team {cast.team.slug}, the scheduler config" in off.json()["fields"][
        "task_governance"][0]["message"]
    run(drive, admin.delete(f"{QUOTAS}/{mine.pk}"))
    run(drive, admin.delete(config_path))
    assert not SchedulerConfig.objects.exists()
    assert sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config.config_id)["Status"] == \
        "Deleted"
    run(drive, admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": False}}))
