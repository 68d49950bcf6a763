"""Priorities and admission: a workload's priority must be one the cluster's scheduler config defines (endpoints
here; jobs in test_governance), and a Kueue Workload's conditions say where it stands."""

from __future__ import annotations

from governance.admission import admission_of
from tests.governance.rows import governed_cluster


def test_a_workloads_conditions_say_where_it_stands_with_kueue():
    def workload(*conditions):
        return {"metadata": {"name": "pytorchjob-a-1"},
                "spec": {"queueName": "q", "priorityClassRef": {"kind": "WorkloadPriorityClass", "name": "p"}},
                "status": {"conditions": [{"type": kind, "status": "True", "reason": reason, "message": message}
                                          for kind, reason, message in conditions]}}

    waiting = admission_of(workload())
    assert (waiting.state, waiting.reason) == ("pending", "Waiting for admission")
    short = admission_of({**workload(), "status": {"conditions": [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending",
         "message": "couldn't assign flavors to pod set main: insufficient quota"}]}})
    assert (short.state, short.reason) == ("pending", "couldn't assign flavors to pod set main: insufficient quota")
    assert admission_of(workload(("QuotaReserved", "QuotaReserved", ""), ("Admitted", "Admitted", ""))).state == \
        "admitted"
    preempted = admission_of(workload(("Evicted", "Preempted", "Preempted to accommodate a higher priority one")))
    assert (preempted.state, preempted.reason, preempted.queue) == (
        "preempted", "Preempted to accommodate a higher priority one", "q")


def test_an_endpoint_priority_the_scheduler_config_does_not_define_is_refused(api, cast, sandbox):
    from inference.models import Endpoint

    cluster = governed_cluster(cast.team)
    for path, body in (("/api/v1/endpoints", {"gpus": 1}), ("/api/v1/managed-endpoints", {})):
        response = api(cast.operator).post(path, {"cluster": cluster.pk, "name": "chat", "model": "models/llama",
                                                  "priority": "urgent", **body})
        assert response.status_code == 400, response.content
        assert response.json()["fields"]["priority"][0]["code"] == "unknown_priority_class"
    assert not Endpoint.objects.exists()
