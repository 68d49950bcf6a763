from django.urls import path

from accounts.api import service_account_views as views

urlpatterns = [
    path("teams/<id:team_id>/service-accounts", views.ServiceAccountListView.as_view(), name="api-service-accounts"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>", views.ServiceAccountDetailView.as_view(),
         name="api-service-account"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>/tokens",
         views.ServiceAccountTokenListView.as_view(), name="api-service-account-tokens"),
    path("teams/<id:team_id>/service-accounts/<id:service_account_id>/tokens/<id:token_id>",
         views.ServiceAccountTokenDetailView.as_view(), name="api-service-account-token"),
]
