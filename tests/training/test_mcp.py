"""An MCP client submits a PyTorch job and follows it to the end: the tools answer what REST answers, and following
``get_training_job_logs`` by ``next_seq`` reads every stored line exactly once."""

from __future__ import annotations

import pytest

from mcp_server.testing import call_tool
from tests.training.running import running
from tests.training.sandbox import training_cluster
from training.models import TrainingLogLine

RUN = {"sandbox.instantstart.dev/steps": "15", "sandbox.instantstart.dev/lines-per-step": "2"}


@pytest.mark.django_db(transaction=True)
def test_an_agent_submits_and_follows_a_pytorch_job(cast, token_for, sandbox, fast_polling):
    cluster = training_cluster(cast.team, ray=False)
    secret = token_for(cast.operator)
    is_error, recipes = call_tool(secret, "list_recipes")
    assert not is_error and "pytorch" in {recipe["slug"] for recipe in recipes["results"]}

    is_error, submitted = call_tool(secret, "submit_training_job", {
        "cluster": cluster.pk, "recipe": "pytorch", "name": "agent-job",
        "config": {"script": "train.py", "replicas": 2, "annotations": RUN}})
    assert not is_error, submitted
    job_id = submitted["job"]["id"]
    seen: list[dict] = []
    after = 0
    with running(job_id, submitted["operation"]["id"]) as stop:
        for _ in range(600):
            is_error, page = call_tool(secret, "get_training_job_logs", {"job_id": job_id, "after_seq": after,
                                                                         "limit": 1000})
            assert not is_error, page
            seen += page["lines"]
            after = page["next_seq"]
            if page["complete"] and after == page["last_seq"]:
                break
            stop.wait(0.05)
        else:
            pytest.fail("the job's logs never completed")

    is_error, job = call_tool(secret, "get_training_job", {"job_id": job_id})
    assert not is_error and job["state"] == "succeeded" and job["logs_complete"]
    stored = list(TrainingLogLine.objects.filter(job_id=job_id).values_list("seq", flat=True))
    assert [line["seq"] for line in seen] == stored == list(range(1, len(stored) + 1))
    assert {line["rank"] for line in seen} == {0, 1}
    assert sum("step=15, loss=" in line["text"] for line in seen) == 2
    is_error, tail = call_tool(secret, "get_training_job_logs", {"job_id": job_id, "tail": 3})
    assert not is_error and [line["seq"] for line in tail["lines"]] == stored[-3:]
