"""REST routes of instance groups, cluster settings and software updates (mounted under /api/v1)."""

from django.urls import path

from clusters.api import group_views, settings_views

urlpatterns = [
    path("clusters/<id:cluster_id>/instance-groups", group_views.GroupListCreateView.as_view(),
         name="api-cluster-instance-groups"),
    path("clusters/<id:cluster_id>/instance-groups/<str:name>", group_views.GroupDetailView.as_view(),
         name="api-cluster-instance-group"),
    path("clusters/<id:cluster_id>/settings", settings_views.ClusterSettingsView.as_view(),
         name="api-cluster-settings"),
    path("clusters/<id:cluster_id>/software-update", settings_views.SoftwareUpdateView.as_view(),
         name="api-cluster-software-update"),
]
