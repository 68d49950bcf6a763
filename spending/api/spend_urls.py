from django.urls import path

from spending.api import spend_views as views

urlpatterns = [
    path("teams/<id:team_id>/spend", views.TeamSpendView.as_view(), name="api-team-spend"),
    path("teams/<id:team_id>/spend/export", views.TeamSpendExportView.as_view(), name="api-team-spend-export"),
]
