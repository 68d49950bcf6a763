"""Human approval of destructive agent actions: an MCP call the team's policy holds answers ``approval_required``
with a pending request; REST and the portal are not held; team admins approve (the action runs once, as the
requester, re-authorized then) or reject with a reason; requests expire; the agent follows with
``get_approval_request``. Cluster rows without cloud resources: the delete only starts its operation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import AuditEvent, Membership, Role
from accounts.services import user_switch_team
from config.context import Source
from config.errors import PermissionDenied, ValidationFailed
from mcp_server.auth import caller_for_secret
from mcp_server.testing import call_tool, call_tool_as
from operations.approvals import services
from operations.models import ApprovalPolicy, ApprovalRequest, ApprovalState, Operation
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def approver(cast, make_user):
    """A second admin of the cast's team, who decides what the first admin's agent asked for."""
    user = make_user("abe")
    Membership.objects.create(team=cast.team, user=user, role=Role.ADMIN)
    return user


def held_delete(cast, token_for) -> tuple[ApprovalRequest, dict]:
    cluster = factories.cluster(cast.team, "doomed")
    is_error, body = call_tool(token_for(cast.admin), "delete_cluster",
                               {"cluster_id": cluster.pk, "confirm": "doomed"})
    assert not is_error and body["code"] == "approval_required", body
    return ApprovalRequest.objects.get(pk=body["approval_request"]["id"]), body


def deletes_of(target_id) -> int:
    return Operation.objects.filter(kind="cluster.delete", target_id=str(target_id)).count()


def test_an_mcp_delete_is_held_and_rest_is_not(cast, token_for, api):
    approval, body = held_delete(cast, token_for)
    shown = body["approval_request"]
    assert shown["state"] == "pending" and shown["requested_by"] == cast.admin.username
    assert shown["what"].startswith("cluster.delete on cluster 'doomed")
    assert shown["status_tool"] == "get_approval_request"
    assert shown["arguments"] == {"confirm": "doomed"} and shown["expires_at"]
    assert deletes_of(approval.target_id) == 0
    assert AuditEvent.objects.filter(action="approval.request", actor=cast.admin, source="mcp").exists()
    result = call_tool_as(caller_for_secret(token_for(cast.admin)), "delete_cluster",
                          {"cluster_id": int(approval.target_id), "confirm": "doomed"})
    assert result.meta["instantstart/next_tool"] == "get_approval_request"
    assert result.content[0].text.startswith("APPROVAL REQUIRED, NOT DONE")

    other = factories.cluster(cast.team, "plain")
    response = api(cast.admin).post(f"/api/v1/clusters/{other.pk}/delete", {"confirm": "plain"})
    assert response.status_code == 202 and response.json()["operation"]["kind"] == "cluster.delete"
    assert ApprovalRequest.objects.count() == 2  # the two MCP calls; the REST call ran at once


def test_approval_runs_the_action_once_as_the_requester(cast, token_for, api, approver):
    approval, _ = held_delete(cast, token_for)
    stale = ApprovalRequest.objects.get(pk=approval.pk)  # read before the first approval, as a racing approver would
    response = api(approver).post(f"/api/v1/approval-requests/{approval.pk}/approve", {"reason": "ok"})
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["state"] == "executed" and answer["decided_by"] == approver.username and answer["terminal"]
    operation = Operation.objects.get(pk=answer["operation_id"])
    assert operation.created_by == cast.admin and operation.source == Source.MCP
    event = AuditEvent.objects.get(action="approval.approve")
    assert event.actor == approver and event.after["requested_by"] == cast.admin.username
    assert event.after["operation"] == operation.pk
    assert AuditEvent.objects.filter(action="cluster.delete", actor=cast.admin, source="mcp").exists()

    again = api(approver).post(f"/api/v1/approval-requests/{approval.pk}/approve", {})
    assert again.status_code == 409 and again.json()["code"] == "approval_not_pending"
    with pytest.raises(Exception, match="already") as refused:
        services.approval_approve(actor=cast.admin, approval=stale, source=Source.API)
    assert refused.value.code == "approval_not_pending"
    assert deletes_of(approval.target_id) == 1

    is_error, followed = call_tool(token_for(cast.admin), "get_approval_request", {"request_id": approval.pk})
    assert not is_error and followed["state"] == "executed" and followed["operation_id"] == operation.pk


def test_rejection_records_the_reason_the_agent_sees(cast, token_for, api, approver):
    approval, _ = held_delete(cast, token_for)
    missing = api(approver).post(f"/api/v1/approval-requests/{approval.pk}/reject", {})
    assert missing.status_code == 400 and missing.json()["fields"]["reason"][0]["code"] == "required"
    response = api(approver).post(f"/api/v1/approval-requests/{approval.pk}/reject", {"reason": "still in use"})
    assert response.status_code == 200 and response.json()["state"] == "rejected"
    is_error, followed = call_tool(token_for(cast.admin), "get_approval_request", {"request_id": approval.pk})
    assert not is_error and followed["state"] == "rejected" and followed["reason"] == "still in use"
    assert deletes_of(approval.target_id) == 0
    assert AuditEvent.objects.get(action="approval.reject").after["requested_by"] == cast.admin.username


def test_an_expired_request_cannot_be_approved(cast, token_for, api, approver):
    approval, _ = held_delete(cast, token_for)
    ApprovalRequest.objects.filter(pk=approval.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = api(approver).post(f"/api/v1/approval-requests/{approval.pk}/approve", {})
    assert response.status_code == 409 and response.json()["code"] == "approval_expired"
    assert api(approver).get(f"/api/v1/approval-requests/{approval.pk}").json()["state"] == "expired"
    assert api(approver).get("/api/v1/approval-requests", state="pending").json()["results"] == []
    assert deletes_of(approval.target_id) == 0


def test_only_team_admins_decide_and_never_through_mcp(cast, token_for, api):
    approval, _ = held_delete(cast, token_for)
    for user, status in ((cast.operator, 403), (cast.viewer, 403), (cast.outsider, 404)):
        response = api(user).post(f"/api/v1/approval-requests/{approval.pk}/approve", {})
        assert response.status_code == status, (user, response.content)
    assert api(cast.viewer).get(f"/api/v1/approval-requests/{approval.pk}").status_code == 200
    with pytest.raises(PermissionDenied) as refused:
        services.approval_approve(actor=cast.admin, approval=approval, source=Source.MCP)
    assert refused.value.code == "approval_by_agent"
    assert ApprovalRequest.objects.get(pk=approval.pk).state == ApprovalState.PENDING


def test_a_requester_who_lost_the_right_fails_clearly(cast, token_for, api, approver):
    approval, _ = held_delete(cast, token_for)
    Membership.objects.filter(team=cast.team, user=cast.admin).update(role=Role.VIEWER)
    answer = api(approver).post(f"/api/v1/approval-requests/{approval.pk}/approve", {}).json()
    assert answer["state"] == "failed" and answer["error_code"] == "permission_denied"
    assert deletes_of(approval.target_id) == 0


def test_an_unauthorized_agent_call_is_refused_not_held(cast, token_for):
    cluster = factories.cluster(cast.team, "kept")
    is_error, body = call_tool(token_for(cast.operator), "delete_cluster", {"cluster_id": cluster.pk,
                                                                           "confirm": "kept"})
    assert is_error and body["code"] == "permission_denied"
    imported = factories.cluster(cast.team, "outside", origin="imported")
    is_error, body = call_tool(token_for(cast.admin), "delete_cluster", {  # refused by the service, in a dry run
        "cluster_id": imported.pk, "confirm": "outside", "delete_resources": True})
    assert is_error and body["code"] == "permission_denied" and "Only platform admins" in body["message"]
    assert not ApprovalRequest.objects.exists() and not Operation.objects.exists()
    assert not AuditEvent.objects.filter(action="cluster.delete").exists()


def test_secret_arguments_are_refused_not_stored(cast):
    cluster = factories.cluster(cast.team, "vault")
    with pytest.raises(ValidationFailed) as refused:
        services.approval_hold(actor=cast.admin, source=Source.MCP, approved=False, action="cluster.delete",
                               target=cluster, team=cast.team, method="POST", path="/x",
                               body={"confirm": "vault", "options": {"api_key": "s3cr3t"}})
    assert refused.value.fields["api_key"][0]["code"] == "approval_secret_argument"
    assert not ApprovalRequest.objects.exists()


def test_the_policy_decides_what_is_held(cast, token_for, api):
    url = f"/api/v1/teams/{cast.team.pk}/approval-policy"
    policy = api(cast.viewer).get(url).json()
    assert "cluster.delete" in policy["actions"] and "node.reboot" not in policy["actions"]
    assert policy["ttl_hours"] == 24 and "node.reboot" in policy["approvable_actions"]
    bad = api(cast.admin).patch(url, {"actions": ["cluster.create"]})
    assert bad.status_code == 400 and bad.json()["fields"]["actions"][0]["code"] == "invalid_choice"
    assert api(cast.operator).patch(url, {"ttl_hours": 2}).status_code == 403
    assert api(cast.admin).patch(url, {"actions": ["node.delete"], "ttl_hours": 2}).json()["ttl_hours"] == 2
    cluster = factories.cluster(cast.team, "free")
    is_error, body = call_tool(token_for(cast.admin), "delete_cluster", {"cluster_id": cluster.pk, "confirm": "free"})
    assert not is_error and body["operation"]["kind"] == "cluster.delete"


def test_the_portal_lists_and_approves(cast, token_for, approver):
    approval, _ = held_delete(cast, token_for)
    client = Client()
    client.force_login(approver)
    page = client.get("/approvals/")
    content = page.content.decode()
    assert page.status_code == 200 and f'data-approval-id="{approval.pk}"' in content
    assert f'data-testid="approve-{approval.pk}"' in content and 'data-testid="nav-approvals"' in content
    response = client.post(f"/approvals/{approval.pk}/approve/", {"reason": ""}, follow=True)
    assert response.status_code == 200 and "Approved and run" in response.content.decode()
    assert ApprovalRequest.objects.get(pk=approval.pk).state == ApprovalState.EXECUTED
    viewer = Client()
    viewer.force_login(cast.viewer)
    assert f'data-testid="approve-{approval.pk}"' not in viewer.get("/approvals/").content.decode()

    user_switch_team(actor=approver, team=cast.team, source=Source.SYSTEM)
    saved = client.post("/approvals/policy/", {"actions": ["node.delete", "node.reboot"], "ttl_hours": "2"},
                        follow=True)
    assert "Approval policy of Vision saved" in saved.content.decode()
    policy = ApprovalPolicy.objects.get(team=cast.team)
    assert (policy.actions, policy.ttl_hours) == (["node.delete", "node.reboot"], 2)
    assert AuditEvent.objects.filter(action="approval_policy.update", actor=approver, source="portal").exists()


def test_a_dry_run_is_not_held(cast, token_for):
    cluster = factories.cluster(cast.team, "preview")
    is_error, body = call_tool(token_for(cast.admin), "delete_cluster",
                               {"cluster_id": cluster.pk, "confirm": "preview", "dry_run": True})
    assert not is_error and body.get("code") != "approval_required", body
    assert not ApprovalRequest.objects.exists()
