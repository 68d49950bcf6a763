"""Portal URLs of a team's service accounts."""

from django.urls import path

from accounts.views import service_accounts as views

urlpatterns = [
    path("teams/<id:team_id>/service-accounts/", views.service_account_list, name="service-account-list"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>/", views.service_account_detail,
         name="service-account-detail"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>/deactivate/",
         views.service_account_deactivate, name="service-account-deactivate"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>/tokens/", views.service_account_token_create,
         name="service-account-token-create"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>/tokens/<id:token_id>/revoke/",
         views.service_account_token_revoke, name="service-account-token-revoke"),
]
