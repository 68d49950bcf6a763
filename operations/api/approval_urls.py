from django.urls import path

from operations.api import approval_views as views

urlpatterns = [
    path("approval-requests", views.ApprovalListView.as_view(), name="api-approval-requests"),
    path("approval-requests/<id:request_id>", views.ApprovalDetailView.as_view(), name="api-approval-request"),
    path("approval-requests/<id:request_id>/approve", views.ApprovalApproveView.as_view(),
         name="api-approval-request-approve"),
    path("approval-requests/<id:request_id>/reject", views.ApprovalRejectView.as_view(),
         name="api-approval-request-reject"),
    path("teams/<id:team_id>/approval-policy", views.ApprovalPolicyView.as_view(), name="api-approval-policy"),
]
