from django.urls import path

from costs.api import views

urlpatterns = [
    path("estimates", views.EstimateView.as_view(), name="api-estimates"),
]
