from django.urls import path

from spending.api import budget_views as views

urlpatterns = [
    path("teams/<id:team_id>/budget", views.TeamBudgetView.as_view(), name="api-team-budget"),
]
