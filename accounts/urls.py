"""Portal URLs (mounted at the site root): login, dashboard, section pages, teams, settings, tokens, audit."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts.views import audit, home, invitations, login, playbooks, teams, tokens, users

urlpatterns = [
    path("login/", login.SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", home.dashboard, name="dashboard"),
    path("me/team/", home.switch_team, name="switch-team"),
    path("settings/", home.account_settings, name="settings"),
    path("settings/tokens/", tokens.token_list, name="token-list"),
    path("settings/tokens/new/", tokens.token_create, name="token-create"),
    path("settings/tokens/<id:token_id>/revoke/", tokens.token_revoke, name="token-revoke"),
    path("settings/playbooks/", playbooks.playbook_list, name="playbook-list"),
    path("settings/playbooks/<slug:name>/", playbooks.playbook_detail, name="playbook-detail"),
    path("teams/", teams.team_list, name="team-list"),
    path("teams/new/", teams.team_create, name="team-create"),
    path("teams/<id:team_id>/", teams.team_detail, name="team-detail"),
    path("teams/<id:team_id>/invitations/", teams.member_invite, name="member-invite"),
    path("teams/<id:team_id>/invitations/<id:invitation_id>/revoke/", teams.invitation_revoke,
         name="invitation-revoke"),
    path("invitations/<id:invitation_id>/accept/", invitations.invitation_accept, name="invitation-accept"),
    path("invitations/<id:invitation_id>/decline/", invitations.invitation_decline, name="invitation-decline"),
    path("invitations/<str:secret>/", invitations.invitation_link, name="invitation-link"),
    path("users/new/", users.user_create, name="user-create"),
    path("teams/<id:team_id>/members/<id:membership_id>/role/", teams.member_role, name="member-role"),
    path("teams/<id:team_id>/members/<id:membership_id>/remove/", teams.member_remove, name="member-remove"),
    path("audit/", audit.audit_list, name="audit-list"),
    path("audit/<id:event_id>/", audit.audit_detail, name="audit-detail"),
    path("audit/<id:event_id>/row/", audit.audit_row, name="audit-row"),
    path("", include("accounts.sso_urls")),
    path("", include("accounts.service_account_urls")),
]
