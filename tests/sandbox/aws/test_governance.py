"""HyperPod task governance through boto3: cluster scheduler configs and compute quotas, their lifecycle,
versions, checks and lists."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from sandbox import clock
from tests.sandbox.aws.helpers import group, instantly, make_hyperpod, wait_for

ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
POLICY = {"PriorityClasses": [{"Name": "inference", "Weight": 90}, {"Name": "training", "Weight": 50}],
          "FairShare": "Enabled"}


def _quota(count: int = 1, **sharing: Any) -> dict[str, Any]:
    return {"ComputeQuotaResources": [{"InstanceType": "ml.g5.8xlarge", "Count": count}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50, **sharing},
            "PreemptTeamTasks": "LowerPriority"}


def _code(excinfo: pytest.ExceptionInfo[ClientError]) -> str:
    return excinfo.value.response["Error"]["Code"]


def _governed(client, addon: bool = True) -> tuple[Any, dict[str, Any]]:
    """A SageMaker client and an InService cluster (two ml.g5.8xlarge, one ml.m5.xlarge), the task-governance
    add-on ACTIVE on its EKS cluster when ``addon``."""
    cluster = make_hyperpod(client, groups=[group(), group("cpu", "ml.m5.xlarge", 1)])
    if addon:
        eks = client("eks")
        name = cluster["Orchestrator"]["Eks"]["ClusterArn"].rsplit("/", 1)[1]
        with instantly():
            eks.create_addon(clusterName=name, addonName=ADDON)
            wait_for(lambda: eks.describe_addon(clusterName=name, addonName=ADDON)["addon"]["status"],
                     lambda status: status == "ACTIVE")
    return client("sagemaker"), cluster


def test_scheduler_config_lifecycle_versions_and_one_per_cluster(client):
    sagemaker, cluster = _governed(client)
    clock.set_scale(1)  # AWS time: the policy stays Creating until time is sped up below
    created = sagemaker.create_cluster_scheduler_config(
        Name="policy", ClusterArn=cluster["ClusterArn"], SchedulerConfig=POLICY, Description="first",
        Tags=[{"Key": "team", "Value": "platform"}])
    policy_id = created["ClusterSchedulerConfigId"]
    assert created["ClusterSchedulerConfigArn"].endswith(f":cluster-scheduler-config/{policy_id}")
    described = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id)
    assert (described["Status"], described["ClusterSchedulerConfigVersion"]) == ("Creating", 1)
    assert described["SchedulerConfig"] == POLICY and described["ClusterArn"] == cluster["ClusterArn"]
    assert described["CreatedBy"]["IamIdentity"]["Arn"].endswith(":user/moto")
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_cluster_scheduler_config(Name="second", ClusterArn=cluster["ClusterArn"],
                                                  SchedulerConfig={"FairShare": "Disabled"})
    assert _code(excinfo) == "ConflictException"
    with pytest.raises(ClientError) as excinfo:
        sagemaker.update_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id, TargetVersion=1,
                                                  SchedulerConfig={"FairShare": "Disabled"})
    assert _code(excinfo) == "ConflictException"  # still Creating

    with instantly():
        wait_for(lambda: sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id)["Status"],
                 lambda status: status == "Created")
        with pytest.raises(ClientError) as excinfo:
            sagemaker.update_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id, TargetVersion=2,
                                                      SchedulerConfig={"FairShare": "Disabled"})
        assert _code(excinfo) == "ConflictException"  # not the current version
        updated = sagemaker.update_cluster_scheduler_config(
            ClusterSchedulerConfigId=policy_id, TargetVersion=1, SchedulerConfig={**POLICY, "FairShare": "Disabled"})
        assert updated["ClusterSchedulerConfigVersion"] == 2
        assert wait_for(lambda: sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id),
                        lambda d: d["Status"] == "Updated")["SchedulerConfig"]["FairShare"] == "Disabled"
    first = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id,
                                                        ClusterSchedulerConfigVersion=1)
    assert (first["SchedulerConfig"]["FairShare"], first["Description"]) == ("Enabled", "first")
    assert sagemaker.list_tags(ResourceArn=created["ClusterSchedulerConfigArn"])["Tags"] == [
        {"Key": "team", "Value": "platform"}]
    (summary,) = sagemaker.list_cluster_scheduler_configs(ClusterArn=cluster["ClusterArn"])[
        "ClusterSchedulerConfigSummaries"]
    assert (summary["Name"], summary["ClusterSchedulerConfigVersion"], summary["Status"]) == ("policy", 2, "Updated")

    with instantly():
        sagemaker.delete_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id)
        wait_for(lambda: sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id)["Status"],
                 lambda status: status == "Deleted")
        again = sagemaker.create_cluster_scheduler_config(Name="policy", ClusterArn=cluster["ClusterArn"],
                                                          SchedulerConfig=POLICY)
    with pytest.raises(ClientError) as excinfo:
        sagemaker.delete_cluster_scheduler_config(ClusterSchedulerConfigId=policy_id)
    assert _code(excinfo) == "ResourceNotFound"
    assert again["ClusterSchedulerConfigId"] != policy_id
    assert [s["Status"] for s in sagemaker.list_cluster_scheduler_configs(
        Status="Deleted")["ClusterSchedulerConfigSummaries"]] == ["Deleted"]


def test_compute_quotas_checked_versioned_listed(client):
    sagemaker, cluster = _governed(client)
    arn = cluster["ClusterArn"]

    def create(name: str, team: str, config: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        return sagemaker.create_compute_quota(Name=name, ClusterArn=arn, ComputeQuotaConfig=config or _quota(),
                                              ComputeQuotaTarget={"TeamName": team, "FairShareWeight": 10}, **extra)

    with instantly():
        team_a = create("team-a-quota", "team-a")["ComputeQuotaId"]
        create("team-b-quota", "team-b", ActivationState="Disabled")
        described = wait_for(lambda: sagemaker.describe_compute_quota(ComputeQuotaId=team_a),
                             lambda d: d["Status"] == "Created")
    assert described["ComputeQuotaVersion"] == 1 and described["ActivationState"] == "Enabled"
    assert described["ComputeQuotaConfig"] == _quota() and described["ComputeQuotaTarget"]["TeamName"] == "team-a"

    refusals = {
        "same name": lambda: create("team-a-quota", "team-c"),
        "same team": lambda: create("other", "team-a"),
        "unknown cluster": lambda: sagemaker.create_compute_quota(
            Name="x", ClusterArn=arn[:-12] + "000000000000", ComputeQuotaConfig=_quota(),
            ComputeQuotaTarget={"TeamName": "x"}),
        "type not in the cluster": lambda: create("p5", "team-p5", {
            "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 1}]}),
        "borrow limit without borrowing": lambda: create("lend", "team-lend", _quota(Strategy="Lend")),
        "weight out of range": lambda: sagemaker.create_compute_quota(
            Name="w", ClusterArn=arn, ComputeQuotaConfig=_quota(), ComputeQuotaTarget={"TeamName": "w",
                                                                                        "FairShareWeight": 101}),
    }
    codes = {}
    for case, call in refusals.items():
        with pytest.raises(ClientError) as excinfo:
            call()
        codes[case] = _code(excinfo)
    assert codes == {"same name": "ConflictException", "same team": "ConflictException",
                     "unknown cluster": "ResourceNotFound", "type not in the cluster": "ValidationException",
                     "borrow limit without borrowing": "ValidationException",
                     "weight out of range": "ValidationException"}

    with instantly():
        updated = sagemaker.update_compute_quota(ComputeQuotaId=team_a, TargetVersion=1,
                                                 ComputeQuotaConfig={**_quota(2), "ResourceSharingConfig": {
                                                     "Strategy": "DontLend"}})
        assert updated["ComputeQuotaVersion"] == 2
        wait_for(lambda: sagemaker.describe_compute_quota(ComputeQuotaId=team_a)["Status"], lambda s: s == "Updated")
    with pytest.raises(ClientError) as excinfo:
        sagemaker.update_compute_quota(ComputeQuotaId=team_a, TargetVersion=2,
                                       ComputeQuotaTarget={"TeamName": "renamed"})
    assert _code(excinfo) == "ValidationException"
    assert sagemaker.describe_compute_quota(ComputeQuotaId=team_a, ComputeQuotaVersion=1)[
        "ComputeQuotaConfig"] == _quota()

    first = sagemaker.list_compute_quotas(ClusterArn=arn, SortBy="Name", SortOrder="Ascending", MaxResults=1)
    second = sagemaker.list_compute_quotas(ClusterArn=arn, SortBy="Name", SortOrder="Ascending",
                                           NextToken=first["NextToken"])
    names = [q["Name"] for q in first["ComputeQuotaSummaries"] + second["ComputeQuotaSummaries"]]
    assert names == ["team-a-quota", "team-b-quota"] and "NextToken" not in second
    assert [q["ActivationState"] for q in sagemaker.list_compute_quotas(NameContains="team-b")[
        "ComputeQuotaSummaries"]] == ["Disabled"]
    with pytest.raises(ClientError) as excinfo:
        sagemaker.describe_compute_quota(ComputeQuotaId="000000000000")
    assert _code(excinfo) == "ResourceNotFound"


def test_policies_fail_without_the_task_governance_addon(client):
    sagemaker, cluster = _governed(client, addon=False)
    with instantly():
        quota = sagemaker.create_compute_quota(Name="q", ClusterArn=cluster["ClusterArn"],
                                               ComputeQuotaConfig=_quota(), ComputeQuotaTarget={"TeamName": "t"})
        failed = wait_for(lambda: sagemaker.describe_compute_quota(ComputeQuotaId=quota["ComputeQuotaId"]),
                          lambda d: d["Status"] != "Creating")
    assert failed["Status"] == "CreateFailed" and ADDON in failed["FailureReason"]
