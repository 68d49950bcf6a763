"""Who may import and delete clusters made outside InstantStart (the platform policy of ``clusters.importing``), on
REST, MCP and the portal: import rules set by platform admins, clusters tagged as another team's, the import
candidates each actor sees, and deleting the AWS resources of an imported cluster."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent, Team
from cloud import aws
from clusters.models import Cluster, ClusterState, ImportRule
from mcp_server.testing import call_tool
from operations import demo
from operations.models import Operation
from tests import factories
from tests.clusters.sandbox import role_for
from tests.clusters.test_import import last_seq, make_network, mutations_since, wait_for

REGION = "us-west-2"


def outside_eks(name: str, subnets: list[str], tags: dict[str, str] | None = None) -> str:
    """An ACTIVE EKS cluster made with plain boto3 (access entries on), with ``tags``; its ARN."""
    eks = aws.client("eks", region=REGION)
    eks.create_cluster(name=name, version="1.32", roleArn=role_for("outside-eks"),
                       resourcesVpcConfig={"subnetIds": subnets},
                       accessConfig={"authenticationMode": "API"}, **({"tags": tags} if tags else {}))
    return wait_for(lambda: eks.describe_cluster(name=name)["cluster"],
                    lambda found: found["status"] == "ACTIVE")["arn"]


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def speech(cast) -> Team:
    """The outsider's team (``cast`` makes it)."""
    return Team.objects.get(slug="speech")


@pytest.fixture
def outside(sandbox, cast):
    """Four EKS clusters nobody tracks: ``research-a`` and ``research-b`` (the latter tagged ``lab=vision``),
    ``finance`` and ``speech-made`` (carrying InstantStart's ownership tags of team Speech), plus ``speech-demo``
    (tagged by a sandbox demo operation of team Speech)."""
    subnets = make_network()["private"]
    outside_eks("research-a", subnets)
    outside_eks("research-b", subnets, {"lab": "vision"})
    outside_eks("finance", subnets)
    outside_eks("speech-made", subnets, {"instantstart:managed-by": "instantstart", "instantstart:team": "speech"})
    operation = demo.demo_start(actor=cast.outsider, team=speech(cast), name="demo", region=REGION, source="system")
    outside_eks("speech-demo", subnets, {demo.OWNER_TAG: str(operation.pk)})
    return subnets


def import_body(cast, name: str, team: Team | None = None) -> dict:
    return {"team": (team or cast.team).pk, "region": REGION, "eks_name": name}


# import -----------------------------------------------------------------------------------------------------------


def test_a_user_with_no_team_can_neither_make_one_nor_import(outside, make_user, api, token_for):
    newcomer = make_user("newbie")
    client, secret = api(newcomer), token_for(newcomer)

    made = client.post("/api/v1/teams", {"name": "Mine", "slug": "mine"})
    rest = client.post("/api/v1/clusters/import", {"region": REGION, "eks_name": "finance"})
    is_error, mcp = call_tool(secret, "import_cluster", {"region": REGION, "eks_name": "finance"})
    listed = client.get("/api/v1/inspect/import-candidates", region=REGION)

    assert made.status_code == 403
    assert rest.status_code == 400 and rest.json()["fields"]["team"][0]["code"] == "required"
    assert is_error and mcp["code"] == "validation_failed"
    assert listed.status_code == 400, "no team, no candidates"
    assert not Cluster.objects.exists() and not Team.objects.filter(slug="mine").exists()


def test_a_team_admin_imports_only_what_an_import_rule_allows(outside, cast, api, token_for, sandbox):
    client, secret = api(cast.admin), token_for(cast.admin)
    before = last_seq(sandbox)

    refused = client.post("/api/v1/clusters/import", import_body(cast, "finance"))
    is_error, mcp = call_tool(secret, "import_cluster", import_body(cast, "finance"))
    portal = login(cast.admin).post(reverse("cluster-import"), {**import_body(cast, "finance"), "team": cast.team.pk})

    assert (refused.status_code, refused.json()["code"]) == (403, "no_import_rule")
    assert "Ask a platform admin" in refused.json()["message"]
    assert is_error and mcp["code"] == "no_import_rule"
    assert portal.status_code == 403 and b"no_import_rule" in portal.content
    assert mutations_since(sandbox, before) == [] and not Cluster.objects.exists()

    ImportRule.objects.create(team=cast.team, name_pattern="research-*", tag_key="lab", tag_value="vision")
    untagged = client.post("/api/v1/clusters/import", import_body(cast, "research-a"))
    tagged = client.post("/api/v1/clusters/import", import_body(cast, "research-b"))

    assert (untagged.status_code, untagged.json()["code"]) == (403, "no_import_rule"), "the rule needs the tag"
    assert tagged.status_code == 202, tagged.content
    assert Cluster.objects.get().name == "research-b"


def test_a_cluster_tagged_as_another_teams_is_never_imported_into_this_one(outside, cast, api, token_for):
    ImportRule.objects.create(team=cast.team, name_pattern="*")
    for user in (cast.admin, cast.superuser):
        for name in ("speech-made", "speech-demo"):
            rest = api(user).post("/api/v1/clusters/import", import_body(cast, name))
            is_error, mcp = call_tool(token_for(user), "import_cluster", import_body(cast, name))
            assert (rest.status_code, rest.json()["code"]) == (403, "cluster_owned_by_another_team"), (user, name)
            assert is_error and mcp["code"] == "cluster_owned_by_another_team"
    portal = login(cast.admin).post(reverse("cluster-import"), {**import_body(cast, "speech-made"),
                                                                "team": cast.team.pk})
    assert portal.status_code == 403 and b"cluster_owned_by_another_team" in portal.content
    assert not Cluster.objects.exists()

    # A platform admin may import it into the team its tags name.
    into_speech = api(cast.superuser).post("/api/v1/clusters/import", import_body(cast, "speech-made", speech(cast)))
    assert into_speech.status_code == 202, into_speech.content
    assert Cluster.objects.get().team == speech(cast)


# candidates -------------------------------------------------------------------------------------------------------


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [candidate["eks_name"] for candidate in response.json()]


def test_candidates_are_listed_only_to_those_who_may_import_them(outside, cast, api, token_for):
    query = {"region": REGION, "team": cast.team.pk}
    viewer = api(cast.viewer).get("/api/v1/inspect/import-candidates", **query)
    assert (viewer.status_code, viewer.json()["code"]) == (403, "permission_denied")
    assert api(cast.operator).get("/api/v1/inspect/import-candidates", **query).status_code == 403
    assert names(api(cast.admin).get("/api/v1/inspect/import-candidates", **query)) == [], "no rule, no candidate"

    ImportRule.objects.create(team=cast.team, name_pattern="research-*")
    ImportRule.objects.create(team=speech(cast), name_pattern="finance")
    assert names(api(cast.admin).get("/api/v1/inspect/import-candidates", **query)) == ["research-a", "research-b"]
    is_error, listed = call_tool(token_for(cast.admin), "list_import_candidates", query)
    assert not is_error and [row["eks_name"] for row in listed["results"]] == ["research-a", "research-b"]
    page = login(cast.admin).get(reverse("cluster-import-candidates"), query).content.decode()
    assert re.findall(r'name="eks_name" value="([^"]+)"', page) == ["research-a", "research-b"]

    everything = names(api(cast.superuser).get("/api/v1/inspect/import-candidates", **query))
    assert everything == ["finance", "research-a", "research-b"], "never another team's tagged clusters"
    assert "speech-made" in names(api(cast.superuser).get("/api/v1/inspect/import-candidates", region=REGION,
                                                          team=speech(cast).pk))


# deleting what InstantStart did not create ------------------------------------------------------------------------


def test_deleting_an_imported_clusters_resources_is_for_platform_admins_with_its_name_typed(cast, api, token_for):
    cluster = factories.cluster(cast.team, "outside", state=ClusterState.ACTIVE, origin="imported")
    body = {"confirm": "outside", "delete_resources": True}

    rest = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/delete", body)
    is_error, mcp = call_tool(token_for(cast.admin), "delete_cluster", {"cluster_id": cluster.pk, **body})
    portal = login(cast.admin).post(reverse("cluster-delete", args=[cluster.pk]),
                                    {"confirm": "outside", "delete_resources": "true"})
    assert (rest.status_code, rest.json()["code"]) == (403, "permission_denied")
    assert "Only platform admins" in rest.json()["message"]
    assert is_error and mcp["code"] == "permission_denied"
    assert portal.status_code == 403
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE and not Operation.objects.exists()

    mistyped = api(cast.superuser).post(f"/api/v1/clusters/{cluster.pk}/delete", {**body, "confirm": "outsid"})
    assert mistyped.status_code == 400 and mistyped.json()["fields"]["confirm"][0]["code"] == "confirmation_mismatch"
    is_error, held = call_tool(token_for(cast.superuser), "delete_cluster", {"cluster_id": cluster.pk, **body})
    assert not is_error and held["code"] == "approval_required", held  # the team holds an agent's cluster delete
    approved = api(cast.superuser).post(f"/api/v1/approval-requests/{held['approval_request']['id']}/approve", {})
    deleted = Operation.objects.get(pk=approved.json()["operation_id"])
    assert deleted.kind == "cluster.delete" and deleted.params["imported"] is True


# import rules -----------------------------------------------------------------------------------------------------


def test_platform_admins_set_import_rules_and_team_members_read_their_own(cast, api):
    body = {"team": cast.team.pk, "name_pattern": "research-*", "region": REGION}
    refused = api(cast.admin).post("/api/v1/import-rules", body)
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")

    created = api(cast.superuser).post("/api/v1/import-rules", body)
    assert created.status_code == 201, created.content
    assert {key: created.json()[key] for key in ("team", "name_pattern", "region", "tag_key", "created_by")} == {
        "team": cast.team.pk, "name_pattern": "research-*", "region": REGION, "tag_key": "", "created_by": "root"}
    ImportRule.objects.create(team=speech(cast), name_pattern="*")
    assert [rule["team"] for rule in api(cast.viewer).get("/api/v1/import-rules").json()["results"]] == [cast.team.pk]
    assert len(api(cast.superuser).get("/api/v1/import-rules").json()["results"]) == 2

    empty = api(cast.superuser).post("/api/v1/import-rules", {"team": cast.team.pk})
    nowhere = api(cast.superuser).post("/api/v1/import-rules", {"team": cast.team.pk, "name_pattern": "x",
                                                                "region": "mars-north-1"})
    assert empty.json()["fields"]["name_pattern"][0]["code"] == "import_rule_empty"
    assert nowhere.json()["fields"]["region"][0]["code"] == "unknown_region"

    rule_id = created.json()["id"]
    assert api(cast.admin).delete(f"/api/v1/import-rules/{rule_id}").status_code == 403
    assert api(cast.superuser).delete(f"/api/v1/import-rules/{rule_id}").status_code == 204
    assert list(AuditEvent.objects.filter(action__startswith="import_rule.").values_list("action", flat=True)
                .order_by("id")) == ["import_rule.create", "import_rule.delete"]


def test_the_import_rules_page(cast):
    ImportRule.objects.create(team=cast.team, name_pattern="research-*")
    member = login(cast.viewer).get(reverse("cluster-import-rules")).content.decode()
    assert "research-*" in member and 'name="tag_key"' not in member and "Remove" not in member
    assert login(cast.admin).post(reverse("cluster-import-rules"),
                                  {"team": cast.team.pk, "name_pattern": "x"}).status_code == 403

    admin = login(cast.superuser)
    added = admin.post(reverse("cluster-import-rules"), {"team": cast.team.pk, "name_pattern": "", "tag_key": "",
                                                         "tag_value": "", "region": ""})
    assert added.status_code == 400 and b'data-error-code="import_rule_empty"' in added.content
    added = admin.post(reverse("cluster-import-rules"), {"team": cast.team.pk, "name_pattern": "",
                                                         "tag_key": "lab", "tag_value": "vision", "region": ""})
    assert added.status_code == 302
    rule = ImportRule.objects.get(tag_key="lab")
    assert admin.post(reverse("cluster-import-rule-delete", args=[rule.pk])).status_code == 302
    assert not ImportRule.objects.filter(pk=rule.pk).exists()
