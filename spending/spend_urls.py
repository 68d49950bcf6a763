"""Spending portal URLs (mounted at the site root): the current team's spend page, its CSV, and the budget form."""

from django.urls import path

from spending.views import spend

urlpatterns = [
    path("spending/", spend.spend_page, name="spending"),
    path("spending/export.csv", spend.spend_export, name="spending-export"),
    path("spending/budget/", spend.budget_set, name="spending-budget"),
]
