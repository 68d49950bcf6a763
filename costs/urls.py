"""Costs portal URLs: the estimate fragment forms load as capacity is chosen."""

from django.urls import path

from costs.views import estimates

urlpatterns = [
    path("costs/estimate/", estimates.estimate_fragment, name="cost-estimate"),
]
