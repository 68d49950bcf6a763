"""Estimates on every face: REST, MCP (the same answer and the same refusals) and the portal fragment forms load."""

from __future__ import annotations

from mcp_server.testing import call_tool

ESTIMATES = "/api/v1/estimates"


def test_rest_and_mcp_answer_the_same_estimate_and_refusals(db, sandbox, cast, api, token_for):
    query = {"region": "us-west-2", "instances": "ml.p5.48xlarge:2,ml.p5e.48xlarge", "team": cast.team.pk}
    response = api(cast.viewer).get(ESTIMATES, **query)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["usd_per_hour"] == "126.592000" and body["unpriced"] == ["ml.p5e.48xlarge"]
    assert body["summary"].startswith("2 × ml.p5.48xlarge + 1 × ml.p5e.48xlarge ≈ $126.59/hour, on-demand")
    assert body["lines"][0]["usd_per_instance_hour"] == "63.296000" and body["lines"][1]["as_of"] is None
    secret = token_for(cast.viewer)
    is_error, answered = call_tool(secret, "estimate_cost", query)
    assert not is_error and answered == body
    for bad, field, code in (({"region": "mars-1"}, "region", "unknown_region"),
                             ({"instances": "ml.warp9.huge:1"}, "instances", "unknown_instance_type"),
                             ({"instances": "ml.g5.8xlarge:many"}, "instances", "invalid"),
                             ({"instances": "ml.g5.8xlarge:0"}, "instances", "invalid")):
        refused = api(cast.viewer).get(ESTIMATES, **{**query, **bad})
        assert refused.status_code == 400 and refused.json()["fields"][field][0]["code"] == code, refused.content
        is_error, answered = call_tool(secret, "estimate_cost", {**query, **bad})
        assert is_error and answered == refused.json()


def test_the_portal_fragment_follows_the_form(db, sandbox, client, cast):
    client.force_login(cast.viewer)
    cast.viewer.current_team = cast.team
    cast.viewer.save()
    page = client.get("/costs/estimate/", {"region": "us-west-2", "instance_type": "ml.g5.8xlarge",
                                           "instance_count": "4"})
    assert page.status_code == 200 and "≈ $12.24/hour" in page.content.decode()
    half_typed = client.get("/costs/estimate/", {"region": "us-west-2", "instance_type": "ml.g5.8xlarge",
                                                 "instance_count": ""})
    assert "No estimate yet." in half_typed.content.decode()
