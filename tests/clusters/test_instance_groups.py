"""Instance groups against the sandbox: add (every capacity type and interface mode), scale with the explicit-diff
contract, immutable fields, members set outside InstantStart surviving our updates, delete, and bad input."""

from __future__ import annotations

import pytest

from cloud import aws
from clusters import usage
from clusters.models import InstanceGroup
from operations.models import Operation, OperationState
from tests.clusters.sandbox import tracked_hyperpod_cluster

REGION = "us-west-2"


def seq(sandbox) -> int:
    return max((entry["seq"] for entry in sandbox.control("GET", "requests")["requests"]), default=0)


def updates_since(sandbox, mark: int) -> list[str]:
    return [entry["operation"] for entry in sandbox.control("GET", f"requests?since={mark}")["requests"]
            if entry["operation"] in ("UpdateCluster", "CreateSubnet")]


def plan(sandbox, name: str, *, instance_type: str = "ml.p5.48xlarge", zone: str = "us-west-2a") -> str:
    seeded = sandbox.control("POST", "training-plans", {
        "region": REGION, "name": name, "instance_type": instance_type, "instance_count": 4, "duration_hours": 24,
        "availability_zone": zone})
    return seeded["training_plans"][0]["arn"]


def run(api, user, method: str, path: str, body=None, *, drive, expect: int = 202):
    response = api(user).request(method, path, body)
    assert response.status_code == expect, response.content
    if expect == 202:
        operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=90)
        assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_message)
    return response.json()


def groups(cluster) -> dict:
    found = aws.client("sagemaker", region=REGION).describe_cluster(ClusterName=cluster.hyperpod_arn)
    return {group["InstanceGroupName"]: group for group in found["InstanceGroups"]}


def test_a_spot_group_and_an_efa_only_training_plan_group_are_added_scaled_and_deleted(
        api, cast, sandbox, drive, live_cluster):
    cluster = live_cluster()
    base = f"/api/v1/clusters/{cluster.pk}/instance-groups"
    run(api, cast.admin, "POST", base, {"name": "spot", "instance_type": "ml.g5.8xlarge", "instance_count": 1,
                                        "capacity_type": "spot", "zone": "us-west-2b"}, drive=drive)
    arn = plan(sandbox, "p5-b", zone="us-west-2b")
    run(api, cast.admin, "POST", base, {"name": "trainers", "instance_type": "ml.p5.48xlarge", "instance_count": 2,
                                        "capacity_type": "training-plan", "training_plan_arn": arn,
                                        "interface_mode": "efa-only"}, drive=drive)
    found = groups(cluster)
    assert found["spot"]["CapacityRequirements"] == {"Spot": {}}
    assert found["trainers"]["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert found["trainers"]["TrainingPlanArn"] == arn
    assert found["spot"]["OverrideVpcConfig"]["Subnets"] == found["trainers"]["OverrideVpcConfig"]["Subnets"]
    rows = {row.name: row for row in InstanceGroup.objects.filter(cluster=cluster, deleted=False)}
    assert set(rows) == {"accelerated", "spot", "trainers"}
    assert (rows["trainers"].zone, rows["trainers"].capacity_type, rows["trainers"].interface_mode) == (
        "us-west-2b", "training-plan", "efa-only")
    assert rows["spot"].current_count == rows["spot"].target_count == 1
    compute = cluster.network.subnets.filter(role="compute")
    assert {subnet.zone for subnet in compute} == {"us-west-2a", "us-west-2b"}

    scaled = run(api, cast.admin, "PATCH", f"{base}/spot", {"instance_count": 3}, drive=drive)
    assert scaled["changed"] is True
    assert groups(cluster)["spot"]["CurrentCount"] == 3
    assert InstanceGroup.objects.get(cluster=cluster, name="spot", deleted=False).current_count == 3
    run(api, cast.admin, "PATCH", f"{base}/spot", {"instance_count": 0}, drive=drive)
    assert (groups(cluster)["spot"]["CurrentCount"], groups(cluster)["spot"]["TargetCount"]) == (0, 0)
    run(api, cast.admin, "PATCH", f"{base}/spot", {"instance_count": 1}, drive=drive)
    assert groups(cluster)["spot"]["CurrentCount"] == 1

    run(api, cast.admin, "DELETE", f"{base}/spot", drive=drive)
    assert "spot" not in groups(cluster)
    assert InstanceGroup.objects.get(cluster=cluster, name="spot").deleted


def test_a_change_that_matches_aws_starts_nothing_and_a_fixed_field_is_refused(api, cast, sandbox, drive,
                                                                              live_cluster):
    cluster = live_cluster()
    path = f"/api/v1/clusters/{cluster.pk}/instance-groups/accelerated"
    mark = seq(sandbox)
    unchanged = run(api, cast.admin, "PATCH", path, {"instance_count": 2, "capacity_type": "on-demand"}, drive=drive,
                    expect=200)
    assert unchanged == {**unchanged, "changed": False, "operation": None}
    refused = api(cast.admin).patch(path, {"capacity_type": "spot", "instance_count": 3})
    assert refused.status_code == 400
    assert refused.json()["fields"]["capacity_type"][0]["code"] == "immutable_field"
    refused = api(cast.admin).patch(path, {"interface_mode": "efa-only"})
    assert refused.json()["fields"]["interface_mode"][0]["code"] == "immutable_field"
    assert updates_since(sandbox, mark) == []
    assert not Operation.objects.filter(kind="instance_group.update").exists()


def test_members_set_outside_instantstart_survive_our_update(api, cast, sandbox, drive, live_cluster):
    cluster = live_cluster()
    sagemaker = aws.client("sagemaker", region=REGION)
    current = groups(cluster)["accelerated"]
    outside = {"InstanceGroupName": "accelerated", "InstanceType": current["InstanceType"], "InstanceCount": 2,
               "ExecutionRole": current["ExecutionRole"], "LifeCycleConfig": current["LifeCycleConfig"],
               "ThreadsPerCore": current["ThreadsPerCore"], "InstanceStorageConfigs": current["InstanceStorageConfigs"],
               "KubernetesConfig": {"Labels": {"team": "vision"}, "Taints": [
                   {"Key": "dedicated", "Value": "vision", "Effect": "NoSchedule"}]},
               "ScheduledUpdateConfig": {"ScheduleExpression": "cron(0 4 ? * SUN *)"},
               "MinInstanceCount": 1}
    sagemaker.update_cluster(ClusterName=cluster.hyperpod_arn, InstanceGroups=[outside])
    sandbox.control("PUT", "clock", {"scale": 0.001})
    drive_until_in_service(sagemaker, cluster)

    run(api, cast.admin, "PATCH", f"/api/v1/clusters/{cluster.pk}/instance-groups/accelerated",
        {"instance_count": 3}, drive=drive)
    after = groups(cluster)["accelerated"]
    assert after["TargetCount"] == 3
    assert after["KubernetesConfig"]["DesiredLabels"] == {"team": "vision"}
    assert after["KubernetesConfig"]["DesiredTaints"] == [{"Key": "dedicated", "Value": "vision",
                                                          "Effect": "NoSchedule"}]
    assert after["ScheduledUpdateConfig"] == {"ScheduleExpression": "cron(0 4 ? * SUN *)"}
    assert after["MinCount"] == 1


def drive_until_in_service(sagemaker, cluster) -> None:
    import time

    deadline = time.monotonic() + 30
    while sagemaker.describe_cluster(ClusterName=cluster.hyperpod_arn)["ClusterStatus"] != "InService":
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"instance_type": "ml.nothing.large"}, "instance_type", "instance_type_not_allowed"),
    ({"instance_count": 50}, "instance_count", "quota_exceeded"),
    ({"instance_count": 0}, "instance_count", "invalid_count"),
    ({"interface_mode": "efa-only", "instance_type": "ml.g5.xlarge"}, "interface_mode", "efa_not_supported"),
    ({"name": "workers"}, "name", "instance_group_name_taken"),
    ({"threads_per_core": 2, "instance_type": "ml.c6g.large"}, "threads_per_core", "invalid_threads_per_core"),
])
def test_bad_groups_are_refused_before_anything_is_sent(api, cast, sandbox, body, field, code):
    cluster = tracked_hyperpod_cluster(cast.team)
    sandbox.control("PUT", "quotas", {"service_code": "sagemaker", "quota_name": "ml.g5.8xlarge for cluster usage",
                                      "value": 10, "region": REGION})
    mark = seq(sandbox)
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/instance-groups", {
        "name": "more", "instance_type": "ml.g5.8xlarge", "instance_count": 1, "zone": "us-west-2a", **body})
    assert response.status_code == 400, response.content
    assert code in [error["code"] for error in response.json()["fields"][field]]
    assert updates_since(sandbox, mark) == []
    assert not InstanceGroup.objects.filter(cluster=cluster, name="more").exists()


def test_training_plan_rules_for_a_group(api, cast, sandbox):
    cluster = tracked_hyperpod_cluster(cast.team)
    arn = plan(sandbox, "p5-c", zone="us-west-2c")
    base = f"/api/v1/clusters/{cluster.pk}/instance-groups"
    spot_with_plan = api(cast.admin).post(base, {"name": "more", "instance_type": "ml.p5.48xlarge",
                                                 "instance_count": 1, "capacity_type": "spot",
                                                 "training_plan_arn": arn})
    assert spot_with_plan.json()["fields"]["training_plan_arn"][0]["code"] == "training_plan_unexpected"
    elsewhere = api(cast.admin).post(base, {"name": "more", "instance_type": "ml.p5.48xlarge", "instance_count": 1,
                                            "capacity_type": "training-plan", "training_plan_arn": arn,
                                            "zone": "us-west-2a"})
    assert elsewhere.json()["fields"]["zone"][0]["code"] == "training_plan_zone"


def test_a_group_with_pinned_work_or_being_deleted_is_not_changed(api, cast, sandbox, drive, live_cluster):
    cluster = live_cluster()
    path = f"/api/v1/clusters/{cluster.pk}/instance-groups/accelerated"

    def pinned(found_cluster, group):
        return ["training job llama (running)"] if group == "accelerated" else []

    usage.register_group_pin_source(pinned)
    try:
        response = api(cast.admin).delete(path)
    finally:
        usage.unregister_group_pin_source(pinned)
    assert response.status_code == 409 and response.json()["code"] == "instance_group_in_use"
    assert "llama" in response.json()["message"]
    InstanceGroup.objects.filter(cluster=cluster, name="accelerated").update(status="Deleting")
    assert api(cast.admin).get(path).json()["capabilities"] == {"instance_group.update": False,
                                                                "instance_group.delete": False}
    response = api(cast.admin).patch(path, {"instance_count": 1})
    assert response.status_code == 409 and response.json()["code"] == "instance_group_deleting"
    assert api(cast.operator).patch(path, {"instance_count": 1}).status_code == 403


def test_an_agent_adds_scales_and_deletes_a_group_on_its_active_cluster(cast, token_for, api, sandbox, drive,
                                                                        live_cluster):
    from mcp_server.testing import call_tool

    live_cluster()
    secret = token_for(cast.admin)

    def finished(answer: dict) -> None:
        drive(Operation.objects.get(pk=answer["operation"]["id"]), timeout=90)
        is_error, waited = call_tool(secret, "wait_for_operation", {"operation_id": answer["operation"]["id"],
                                                                    "timeout_seconds": 0})
        assert not is_error and waited["state"] == "succeeded", waited.get("summary")

    is_error, added = call_tool(secret, "add_instance_group", {
        "name": "spot", "instance_type": "ml.g5.8xlarge", "instance_count": 1, "capacity_type": "spot",
        "idempotency_key": "agent-add-1"})
    assert not is_error, added
    finished(added)
    is_error, scaled = call_tool(secret, "scale_instance_group", {"name": "spot", "instance_count": 2})
    assert not is_error and scaled["changed"] is True
    finished(scaled)
    is_error, again = call_tool(secret, "scale_instance_group", {"name": "spot", "instance_count": 2})
    assert not is_error and again["changed"] is False and again["operation"] is None
    is_error, listed = call_tool(secret, "list_instance_groups", {})
    assert not is_error
    spot = next(group for group in listed["results"] if group["name"] == "spot")
    assert (spot["capacity_type"], spot["current_count"], spot["target_count"]) == ("spot", 2, 2)
    is_error, held = call_tool(secret, "delete_instance_group", {"name": "spot"})
    assert not is_error and held["code"] == "approval_required", held  # the team holds an agent's group delete
    approved = api(cast.superuser).post(f"/api/v1/approval-requests/{held['approval_request']['id']}/approve", {})
    assert approved.json()["state"] == "executed", approved.content
    finished({"operation": {"id": approved.json()["operation_id"]}})
    is_error, listed = call_tool(secret, "list_instance_groups", {})
    assert [group["name"] for group in listed["results"]] == ["accelerated"]


def test_node_recovery_and_software_updates(api, cast, sandbox, drive, live_cluster):
    cluster = live_cluster()
    path = f"/api/v1/clusters/{cluster.pk}/settings"
    assert api(cast.viewer).get(path).json()["node_recovery"] == "Automatic"
    unchanged = run(api, cast.admin, "PATCH", path, {"node_recovery": "Automatic"}, drive=drive, expect=200)
    assert unchanged["changed"] is False
    run(api, cast.admin, "PATCH", path, {"node_recovery": "None"}, drive=drive)
    assert aws.client("sagemaker", region=REGION).describe_cluster(
        ClusterName=cluster.hyperpod_arn)["NodeRecovery"] == "None"
    refused = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/software-update", {"groups": ["nope"]})
    assert refused.json()["fields"]["groups"][0]["code"] == "unknown_instance_group"
    run(api, cast.admin, "POST", f"/api/v1/clusters/{cluster.pk}/software-update", {"groups": ["accelerated"]},
        drive=drive)
    assert groups(cluster)["accelerated"]["SoftwareUpdateStatus"] == "Succeeded"


def test_with_autoscaling_on_groups_get_node_pools_only_where_hyperpod_can_scale_them(api, cast, sandbox, drive,
                                                                                      live_cluster):
    from clusters.features import autoscaling

    cluster = live_cluster()
    run(api, cast.admin, "POST", f"/api/v1/clusters/{cluster.pk}/features/autoscaling/enable", {}, drive=drive)
    base = f"/api/v1/clusters/{cluster.pk}/instance-groups"
    run(api, cast.admin, "POST", base, {"name": "burst", "instance_type": "ml.g5.8xlarge", "instance_count": 0},
        drive=drive)
    run(api, cast.admin, "POST", base, {"name": "spot", "instance_type": "ml.g5.8xlarge", "instance_count": 1,
                                        "capacity_type": "spot"}, drive=drive)
    pools = autoscaling.our_objects(cluster)["nodepools"]
    assert "instantstart-burst" in pools and "instantstart-spot" not in pools
    assert groups(cluster)["burst"]["TargetCount"] == 0
    run(api, cast.admin, "DELETE", f"{base}/burst", drive=drive)
    assert "instantstart-burst" not in autoscaling.our_objects(cluster)["nodepools"]
    updates = sandbox.control("GET", "requests?operation=UpdateCluster&effective=1")["requests"]
    assert len(updates) >= 4  # autoscaling on, two groups added, one deleted: each names the cluster by its ARN
    assert {entry["params"]["ClusterName"] for entry in updates} == {cluster.hyperpod_arn}
