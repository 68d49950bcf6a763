"""REST routes of task governance (mounted under /api/v1 by governance.api.urls)."""

from django.urls import path

from governance.api import quota_views as views

urlpatterns = [
    path("clusters/<id:cluster_id>/governance", views.ClusterGovernanceView.as_view(), name="api-cluster-governance"),
    path("clusters/<id:cluster_id>/scheduler-config", views.SchedulerConfigView.as_view(),
         name="api-cluster-scheduler-config"),
    path("compute-quotas", views.ComputeQuotaListCreateView.as_view(), name="api-compute-quotas"),
    path("compute-quotas/<id:quota_id>", views.ComputeQuotaDetailView.as_view(), name="api-compute-quota"),
]
