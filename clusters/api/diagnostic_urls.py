"""REST routes of the cluster diagnostics (mounted under /api/v1 by clusters.api.urls)."""

from django.urls import path

from clusters.api import diagnostic_views as views

urlpatterns: list = [
    path("clusters/<id:cluster_id>/diagnostics/nodes", views.NodeDiagnosisView.as_view(),
         name="api-cluster-diagnostics-nodes"),
    path("clusters/<id:cluster_id>/diagnostics/creation", views.CreationDiagnosisView.as_view(),
         name="api-cluster-diagnostics-creation"),
]
