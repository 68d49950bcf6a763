"""HyperPod task governance in the simulated cluster: the Kueue objects SageMaker's policies become, and Kueue's
admission of HyperPodPyTorchJobs and Deployment pods — quota, borrowing, reclamation, preemption by priority,
waiting with a reason."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from sandbox.aws.governance import GovernanceView, QuotaView
from sandbox.sim import instances, taskgovernance
from sandbox.sim.objects import STEPS
from tests.sandbox.sim.harness import (
    OPERATOR_PREREQUISITES,
    TRAINING_OPERATOR,
    client,
    instantly,
    make_cluster,
    wait_for,
)

TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
KUEUE, VERSION = "kueue.x-k8s.io", "v1beta2"
JOBS = ("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")


def _job(name: str, team: str, replicas: int = 1, priority: str | None = "training-priority") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": f"hyperpod-ns-{team}-localqueue"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    return {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
            "metadata": {"name": name, "labels": labels, "annotations": {STEPS: "100000"}},
            "spec": {"nprocPerNode": "1", "replicaSpecs": [{"name": "worker", "replicas": replicas, "template": {
                "spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                                         "command": ["hyperpodrun", "train.py"],
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}]}}


class Governed:
    """The cluster's Kueue objects and jobs through the kubernetes client."""

    def __init__(self, api: k8s.ApiClient):
        self.custom, self.core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)

    def submit(self, name: str, team: str, **extra: Any) -> None:
        self.custom.create_namespaced_custom_object(*JOBS[:2], f"hyperpod-ns-{team}", JOBS[2], _job(name, team,
                                                                                                     **extra))

    def job(self, name: str, team: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(*JOBS[:2], f"hyperpod-ns-{team}", JOBS[2], name)

    def workload(self, owner: str, team: str) -> dict[str, Any] | None:
        """The Workload of the job or pod ``owner``."""
        items = self.custom.list_namespaced_custom_object(KUEUE, VERSION, f"hyperpod-ns-{team}", "workloads")["items"]
        return next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == owner), None)

    def conditions(self, job: str, team: str) -> dict[str, tuple[str, str, str]]:
        workload = self.workload(job, team) or {}
        return {c["type"]: (c["status"], c["reason"], c["message"])
                for c in (workload.get("status") or {}).get("conditions") or []}

    def running_pods(self, job: str, team: str) -> int:
        pods = self.core.list_namespaced_pod(f"hyperpod-ns-{team}",
                                             label_selector=f"sagemaker.amazonaws.com/job-name={job}").items
        return sum(1 for pod in pods if pod.status.phase == "Running" and not pod.metadata.deletion_timestamp)

    def admitted(self, job: str, team: str) -> bool:
        return self.conditions(job, team).get("Admitted", ("",))[0] == "True"

    def waiting(self, job: str, team: str) -> tuple[str, str, str]:
        return wait_for(lambda: self.conditions(job, team).get("QuotaReserved", ("", "", "")),
                        lambda c: (c[0] == "False" and c[2].startswith("couldn't")) or c[1] == "Inadmissible")


def _policies(cluster_arn: str) -> None:
    """A scheduler config (training 50, inference 90) and one ml.g5.8xlarge per team, lending and borrowing 100 %."""
    sagemaker = client("sagemaker")
    with instantly():
        sagemaker.create_cluster_scheduler_config(
            Name="policy", ClusterArn=cluster_arn, SchedulerConfig={
                "PriorityClasses": [{"Name": "training", "Weight": 50}, {"Name": "inference", "Weight": 90}],
                "FairShare": "Enabled"})
        for team in ("team-a", "team-b"):
            sagemaker.create_compute_quota(
                Name=f"{team}-quota", ClusterArn=cluster_arn, ComputeQuotaTarget={"TeamName": team,
                                                                                   "FairShareWeight": 10},
                ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": "ml.g5.8xlarge", "Count": 1}],
                                    "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 100},
                                    "PreemptTeamTasks": "LowerPriority"})
        wait_for(lambda: {q["Status"] for q in sagemaker.list_compute_quotas()["ComputeQuotaSummaries"]},
                 lambda statuses: statuses == {"Created"})


def test_quotas_become_kueue_queues_and_jobs_wait_borrow_and_are_preempted():
    api = make_cluster(addons=(*OPERATOR_PREREQUISITES, TRAINING_OPERATOR, TASK_GOVERNANCE))
    _policies(client("sagemaker").describe_cluster(ClusterName="demo-hp")["ClusterArn"])
    kube = Governed(api)

    queue = wait_for(lambda: kube.custom.list_cluster_custom_object(KUEUE, VERSION, "clusterqueues")["items"],
                     lambda items: len(items) == 2)[0]
    assert queue["metadata"]["name"] == "hyperpod-ns-team-a-clusterqueue"
    assert queue["spec"]["cohortName"] and queue["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    (flavor,) = queue["spec"]["resourceGroups"][0]["flavors"]
    gpu = next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
    assert (flavor["name"], gpu["nominalQuota"], gpu["borrowingLimit"]) == ("ml.g5.8xlarge", "1", "1")
    namespace = kube.core.read_namespace("hyperpod-ns-team-a")
    assert namespace.metadata.labels["sagemaker.amazonaws.com/sagemaker-managed-queue"] == "true"
    assert kube.custom.get_namespaced_custom_object(KUEUE, VERSION, "hyperpod-ns-team-a", "localqueues",
                                                    "hyperpod-ns-team-a-localqueue")["spec"]["clusterQueue"] == \
        "hyperpod-ns-team-a-clusterqueue"
    priorities = {p["metadata"]["name"]: p["value"] for p in
                  kube.custom.list_cluster_custom_object(KUEUE, VERSION, "workloadpriorityclasses")["items"]}
    assert priorities == {"training-priority": 50, "inference-priority": 90}

    # team A borrows team B's idle GPU
    kube.submit("a1", "team-a", replicas=2)
    wait_for(lambda: kube.running_pods("a1", "team-a"), lambda n: n == 2)
    workload = kube.workload("a1", "team-a")
    assert workload["spec"]["priority"] == 50 and workload["spec"]["queueName"] == "hyperpod-ns-team-a-localqueue"
    assert workload["status"]["admission"]["clusterQueue"] == "hyperpod-ns-team-a-clusterqueue"
    assert workload["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]

    # team B reclaims its quota: a1 is evicted and its job suspended, b1 runs
    kube.submit("b1", "team-b")
    wait_for(lambda: kube.running_pods("b1", "team-b"), lambda n: n == 1)
    evicted = kube.conditions("a1", "team-a")
    assert evicted["Evicted"][:2] == ("True", "Preempted")
    assert evicted["Preempted"][1] == "InCohortReclamation" and "reclamation within the cohort" in evicted["Evicted"][2]
    assert kube.job("a1", "team-a")["spec"]["runPolicy"]["suspend"] is True
    wait_for(lambda: kube.running_pods("a1", "team-a"), lambda n: n == 0)
    assert kube.waiting("a1", "team-a")[2] == ("couldn't assign flavors to pod set worker: insufficient unused quota "
                                              "for nvidia.com/gpu in flavor ml.g5.8xlarge, 1 more needed")

    # a smaller team-A job fits its own quota; a higher-priority one preempts it within the team
    kube.submit("a2", "team-a")
    wait_for(lambda: kube.admitted("a2", "team-a"))
    kube.submit("a3", "team-a", priority="inference-priority")
    wait_for(lambda: kube.admitted("a3", "team-a"))
    preempted = kube.conditions("a2", "team-a")
    assert preempted["Preempted"][1] == "InClusterQueue"
    assert "due to prioritization in the ClusterQueue" in preempted["Evicted"][2]
    assert preempted["Admitted"][:2] == ("False", "NoReservation")

    # capacity frees when an admitted job is deleted in the foreground (Kueue releases its Workload, then the job
    # goes): the next waiting job that fits is admitted again
    kube.custom.delete_namespaced_custom_object(*JOBS[:2], "hyperpod-ns-team-a", JOBS[2], "a3",
                                                propagation_policy="Foreground")
    wait_for(lambda: kube.admitted("a2", "team-a"))
    assert kube.conditions("a2", "team-a")["Evicted"][:2] == ("False", "QuotaReserved")
    wait_for(lambda: kube.running_pods("a2", "team-a"), lambda n: n == 1)
    wait_for(lambda: kube.custom.list_namespaced_custom_object(*JOBS[:2], "hyperpod-ns-team-a", JOBS[2])["items"],
             lambda jobs: {job["metadata"]["name"] for job in jobs} == {"a1", "a2"})
    assert kube.workload("a3", "team-a") is None

    def queue_status() -> dict[str, Any]:
        return kube.custom.get_cluster_custom_object(KUEUE, VERSION, "clusterqueues",
                                                     "hyperpod-ns-team-a-clusterqueue")["status"]

    assert queue_status()["pendingWorkloads"] == 1 and queue_status()["admittedWorkloads"] == 1
    # a waiting job deleted in the foreground goes too, its Workload with it
    kube.custom.delete_namespaced_custom_object(*JOBS[:2], "hyperpod-ns-team-a", JOBS[2], "a1",
                                                propagation_policy="Foreground")
    wait_for(lambda: kube.workload("a1", "team-a"), lambda workload: workload is None)
    wait_for(queue_status, lambda status: status["pendingWorkloads"] == 0)

    # a priority class the cluster policy does not define: no Workload, the job stays held
    kube.submit("odd", "team-b", priority="urgent-priority")
    reasons = wait_for(lambda: {event.reason: event.message for event in kube.core.list_namespaced_event(
        "hyperpod-ns-team-b", field_selector="involvedObject.name=odd").items}, lambda r: "ErrWorkloadCompose" in r)
    assert "urgent-priority" in reasons["ErrWorkloadCompose"] and kube.workload("odd", "team-b") is None
    assert kube.job("odd", "team-b")["spec"]["runPolicy"]["suspend"] is True

    # a labelled Deployment's pods are Kueue pods: gated while their team's quota is taken, let go when it frees
    labels = {"kueue.x-k8s.io/queue-name": "hyperpod-ns-team-b-localqueue",
              "kueue.x-k8s.io/priority-class": "training-priority"}
    k8s.AppsV1Api(api).create_namespaced_deployment("hyperpod-ns-team-b", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "server"}}, "template": {
            "metadata": {"labels": {"app": "server"}}, "spec": {"containers": [{
                "name": "vllm", "image": "vllm/vllm-openai:v0.6.3",
                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}})

    def server_pod() -> Any:
        pods = kube.core.list_namespaced_pod("hyperpod-ns-team-b", label_selector="app=server").items
        return pods[0] if pods else None

    gated = wait_for(server_pod, lambda pod: pod is not None and pod.status.conditions)
    assert [gate.name for gate in gated.spec.scheduling_gates] == ["kueue.x-k8s.io/admission"]
    assert (gated.status.conditions[0].reason, gated.status.phase) == ("SchedulingGated", "Pending")
    waiting = wait_for(lambda: kube.conditions(gated.metadata.name, "team-b").get("QuotaReserved", ("",) * 3),
                       lambda c: c[0] == "False")
    assert "nvidia.com/gpu in flavor ml.g5.8xlarge" in waiting[2]
    kube.custom.delete_namespaced_custom_object(*JOBS[:2], "hyperpod-ns-team-b", JOBS[2], "b1")
    running = wait_for(server_pod, lambda pod: pod is not None and pod.status.phase == "Running")
    assert not running.spec.scheduling_gates and kube.admitted(running.metadata.name, "team-b")


def test_cluster_queue_limits_follow_the_quota_kinds():
    """Accelerator quotas take cpu and memory in proportion; DontLend lends nothing; absolute borrow limits win."""
    def quota(team: str, resources: list[dict[str, Any]], strategy: str, **sharing: Any) -> QuotaView:
        return QuotaView(id=team, name=team, team=team, fair_share_weight=1, resources=tuple(resources),
                         strategy=strategy, borrow_limit=sharing.get("borrow_limit"),
                         absolute_borrow_limits=tuple(sharing.get("absolute", ())), preempt_team_tasks="Never")

    governed = taskgovernance.Governed(GovernanceView(
        cluster_arn="arn", priority_classes=(), fair_share=False, instance_types={"ml.g5.48xlarge": 2}, quotas=(
            quota("half", [{"InstanceType": "ml.g5.48xlarge", "Accelerators": 4}], "LendAndBorrow", borrow_limit=50,
                  absolute=[{"InstanceType": "ml.g5.48xlarge", "Accelerators": 1}]),
            quota("keep", [{"InstanceType": "ml.g5.48xlarge", "Count": 1}], "DontLend"))))
    half, keep = (governed.cluster_queue(governed.queues[f"hyperpod-ns-{team}-clusterqueue"])
                  for team in ("half", "keep"))

    def limits(queue: dict[str, Any]) -> dict[str, dict[str, str]]:
        (flavor,) = queue["spec"]["resourceGroups"][0]["flavors"]
        return {r["name"]: {k: v for k, v in r.items() if k != "name"} for r in flavor["resources"]}

    allocatable = instances.facts("ml.g5.48xlarge").allocatable()
    assert limits(half)["nvidia.com/gpu"] == {"nominalQuota": "4", "borrowingLimit": "1"}
    assert limits(half)["cpu"]["nominalQuota"] == f"{int(allocatable['cpu'].rstrip('m')) // 2}m"
    assert limits(keep)["nvidia.com/gpu"] == {"nominalQuota": "8", "borrowingLimit": "0", "lendingLimit": "0"}
    assert keep["spec"]["preemption"]["withinClusterQueue"] == "Never" and "fairSharing" not in keep["spec"]
