"""A training job's NCCL/EFA diagnosis against the faults the sandbox injects: the last rank stalls and then times
out in NCCL over a broken EFA path (outcome ``nccl-timeout``), and the EFA device of its node goes missing."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from cloud import kube
from mcp_server.testing import call_tool
from tests.clusters.diagnosis_checks import assert_suggestions_are_catalog_calls, by_code, mutations
from tests.sandbox.aws.helpers import wait_for
from tests.training.running import running
from tests.training.sandbox import training_cluster
from training.models import TrainingJob

EFA = "vpc.amazonaws.com/efa"


@pytest.mark.django_db(transaction=True)
def test_an_nccl_timeout_on_a_node_without_efa_is_diagnosed_with_evidence_and_escalation(api, cast, sandbox,
                                                                                        token_for):
    cluster = training_cluster(cast.team, ray=False)
    response = api(cast.operator).post("/api/v1/training-jobs", {
        "cluster": cluster.pk, "recipe": "pytorch", "name": "allreduce",
        "config": {"script": "train.py", "replicas": 2, "max_retries": 0, "hang_detection": False,
                   "annotations": {"sandbox.instantstart.dev/steps": "12",
                                   "sandbox.instantstart.dev/outcome": "nccl-timeout"}}})
    assert response.status_code == 202, response.content
    body = response.json()
    with running(body["job"]["id"], body["operation"]["id"]) as stop:
        while not TrainingJob.objects.get(pk=body["job"]["id"]).logs_complete:
            stop.wait(0.05)
    job = TrainingJob.objects.get(pk=body["job"]["id"])
    assert job.state == "failed"
    stalled = next(rank for rank in job.ranks if rank["rank"] == 1)
    core = k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    sandbox.control("POST", "device-faults", {"region": cluster.region, "cluster": cluster.eks_name,
                                              "node": stalled["node"], "resource": EFA})
    wait_for(lambda: core.read_node(stalled["node"]), lambda node: node.status.allocatable.get(EFA) == "0")
    before = mutations(sandbox)

    answer = api(cast.viewer).get(f"/api/v1/training-jobs/{job.pk}/diagnostics/nccl")
    assert answer.status_code == 200, answer.content
    diagnosis = answer.json()
    found = by_code(diagnosis)
    assert not diagnosis["healthy"]
    for code in ("nccl_timeout", "libfabric_error", "nccl_error"):
        assert found[code][0]["subject"] == stalled["pod"], code
    assert any("Watchdog caught collective operation timeout" in line for line in found["nccl_timeout"][0]["evidence"])
    assert any("fi_cq_readerr" in line for line in found["libfabric_error"][0]["evidence"])
    (straggler,) = found["straggler"]
    assert straggler["subject"] == stalled["pod"]
    (missing,) = found["efa_missing"]
    assert missing["subject"] == stalled["node"] and f"allocatable {EFA}=0" in missing["evidence"]
    ranks = {entry["rank"]: entry for entry in diagnosis["facts"]["ranks"]}
    assert ranks[1]["last_step"] < ranks[0]["last_step"] and ranks[0]["efa_requested"] >= 1
    assert len({entry["zone"] for entry in diagnosis["facts"]["placement"]}) == 1
    assert "cross_zone_placement" not in found
    assert_suggestions_are_catalog_calls(diagnosis)
    instance = stalled["node"].removeprefix("hyperpod-")
    steps = {(s["step"], s["tool"]): s["arguments"] for s in diagnosis["suggestions"]}
    assert steps[("investigate", "get_training_job_logs")] == {"job_id": job.pk, "rank": 1, "tail": 200}
    assert steps[("investigate", "diagnose_cluster_nodes")] == {"cluster_id": cluster.pk, "node_ids": [instance]}
    assert steps[("reboot", "reboot_cluster_nodes")] == {"cluster_id": cluster.pk, "node_ids": [instance]}
    assert steps[("replace", "replace_cluster_nodes")]["confirm_data_loss"] is True
    assert ("retry", "resubmit_training_job") in steps
    assert mutations(sandbox) == before

    is_error, through_mcp = call_tool(token_for(cast.viewer, read_only=True), "diagnose_training_job",
                                      {"job_id": job.pk})
    assert not is_error and by_code(through_mcp).keys() == found.keys()
