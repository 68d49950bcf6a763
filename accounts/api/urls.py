from django.urls import include, path

from accounts.api import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="api-me"),
    path("teams", views.TeamListView.as_view(), name="api-teams"),
    path("teams/<id:team_id>", views.TeamDetailView.as_view(), name="api-team"),
    path("teams/<id:team_id>/memberships", views.MembershipListView.as_view(), name="api-memberships"),
    path("teams/<id:team_id>/memberships/<id:membership_id>", views.MembershipDetailView.as_view(),
         name="api-membership"),
    path("teams/<id:team_id>/invitations", views.InvitationListView.as_view(), name="api-invitations"),
    path("teams/<id:team_id>/invitations/<id:invitation_id>", views.InvitationDetailView.as_view(),
         name="api-invitation"),
    path("me/invitations", views.MyInvitationListView.as_view(), name="api-my-invitations"),
    path("me/invitations/<id:invitation_id>/accept", views.MyInvitationAcceptView.as_view(),
         name="api-my-invitation-accept"),
    path("me/invitations/<id:invitation_id>/decline", views.MyInvitationDeclineView.as_view(),
         name="api-my-invitation-decline"),
    path("invitations/accept", views.InvitationAcceptByTokenView.as_view(), name="api-invitation-accept"),
    path("tokens", views.TokenListView.as_view(), name="api-tokens"),
    path("tokens/<id:token_id>", views.TokenDetailView.as_view(), name="api-token"),
    path("audit-events", views.AuditEventListView.as_view(), name="api-audit-events"),
    path("audit-events/<id:event_id>", views.AuditEventDetailView.as_view(), name="api-audit-event"),
    path("", include("accounts.api.service_account_urls")),
]
