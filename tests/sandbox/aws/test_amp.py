"""Prometheus workspaces are CREATING, then ACTIVE, on the sandbox clock — as AWS answers them."""

from __future__ import annotations

from sandbox import clock


def test_a_workspace_is_creating_until_its_time_has_passed(client):
    amp = client("amp")
    clock.set_scale(10)  # creation waits until the test lets time run
    workspace = amp.create_workspace(alias="metrics")["workspaceId"]
    assert amp.describe_workspace(workspaceId=workspace)["workspace"]["status"]["statusCode"] == "CREATING"
    assert [item["status"]["statusCode"] for item in amp.list_workspaces(alias="metrics")["workspaces"]] == [
        "CREATING"]
    clock.set_scale(0)
    assert amp.describe_workspace(workspaceId=workspace)["workspace"]["status"]["statusCode"] == "ACTIVE"
