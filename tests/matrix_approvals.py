"""Permission-matrix cases of approval requests and a team's approval policy (added to tests.matrix.CASES).

A pending request is a held delete of a cluster row with no cloud behind it, asked by the team's admin; approving it
replays that delete, which only starts its operation."""

from tests.matrix import AUTHENTICATED, MEMBERS, Case, team

ADMINS = frozenset({"admin", "superuser"})


def pending_request(cast, actor) -> dict:
    from datetime import timedelta

    from django.utils import timezone

    from operations.models import ApprovalRequest
    from tests import factories

    cluster = factories.cluster(cast.team, "matrix")
    approval = ApprovalRequest.objects.create(
        team=cast.team, requested_by=cast.admin, action="cluster.delete", method="POST",
        path=f"/api/v1/clusters/{cluster.pk}/delete", body={"confirm": "matrix"}, target_type="cluster",
        target_id=str(cluster.pk), target_repr=str(cluster), expires_at=timezone.now() + timedelta(hours=1))
    return {"request_id": approval.pk}


CASES = [
    Case("approval_requests_list", AUTHENTICATED, team_scoped=False),
    Case("approval_requests_retrieve", MEMBERS, params=pending_request),
    Case("approval_requests_approve", ADMINS, params=pending_request, body={}),
    Case("approval_requests_reject", ADMINS, params=pending_request, body={"reason": "not now"}),
    Case("approval_policy_retrieve", MEMBERS, params=team),
    Case("approval_policy_update", ADMINS, params=team, body={"ttl_hours": 2}),
]
