"""Dry-run plans say what capacity they add to the hourly bill: creating a cluster, adding and scaling a group."""

from __future__ import annotations

from tests.clusters.sandbox import tracked_hyperpod_cluster

CREATE = {"name": "alpha", "region": "us-west-2", "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
          "instance_count": 2}


def dry_run(client, method: str, path: str, body: dict) -> dict:
    response = client.request(method, f"{path}?dry_run=true", body)
    assert response.status_code == 200, response.content
    return response.json()


def test_plans_of_new_capacity_carry_its_hourly_cost(api, cast, sandbox):
    admin = api(cast.admin)
    created = dry_run(admin, "POST", "/api/v1/clusters", {**CREATE, "team": cast.team.pk})
    sentence = "This adds 2 × ml.g5.8xlarge ≈ $6.12/hour, on-demand."
    assert created["operation"]["cost"] == sentence and created["summary"].endswith(sentence)
    spot = dry_run(admin, "POST", "/api/v1/clusters", {**CREATE, "team": cast.team.pk, "capacity_type": "spot"})
    assert "billed at the spot price" in spot["summary"]

    cluster = tracked_hyperpod_cluster(cast.team)
    base = f"/api/v1/clusters/{cluster.pk}/instance-groups"
    added = dry_run(admin, "POST", base, {"name": "big", "instance_type": "ml.p5.48xlarge", "instance_count": 2,
                                         "zone": "us-west-2a"})
    assert added["operation"]["cost"] == "This adds 2 × ml.p5.48xlarge ≈ $126.59/hour, on-demand."
    scaled = dry_run(admin, "PATCH", f"{base}/workers", {"instance_count": 4})
    assert scaled["operation"]["cost"] == "This adds 3 × ml.g5.8xlarge ≈ $9.18/hour, on-demand."
    other = dry_run(admin, "PATCH", f"{base}/workers", {"deep_health_checks": True})
    assert "cost" not in other["operation"]
