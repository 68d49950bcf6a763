"""Approvals portal URLs (mounted at the site root): the page, a decision, the current team's policy."""

from django.urls import path

from operations.views import approvals

urlpatterns = [
    path("approvals/", approvals.approval_list, name="approvals"),
    path("approvals/policy/", approvals.approval_policy, name="approval-policy"),
    path("approvals/<id:request_id>/approve/", approvals.approval_approve, name="approval-approve"),
    path("approvals/<id:request_id>/reject/", approvals.approval_reject, name="approval-reject"),
]
