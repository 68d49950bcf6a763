"""REST routes of instance groups (mounted under /api/v1 by clusters.api.urls)."""

from django.urls import path

from clusters.api import group_views

urlpatterns = [
    path("clusters/<id:cluster_id>/instance-groups", group_views.GroupListCreateView.as_view(),
         name="api-cluster-instance-groups"),
    path("clusters/<id:cluster_id>/instance-groups/<str:name>", group_views.GroupDetailView.as_view(),
         name="api-cluster-instance-group"),
]
