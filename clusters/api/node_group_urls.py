"""REST routes of a cluster's EKS managed node groups (mounted under /api/v1)."""

from django.urls import path

from clusters.api import node_group_views

urlpatterns = [
    path("clusters/<id:cluster_id>/node-groups", node_group_views.NodeGroupListView.as_view(),
         name="api-cluster-node-groups"),
    path("clusters/<id:cluster_id>/node-groups/<str:name>", node_group_views.NodeGroupDetailView.as_view(),
         name="api-cluster-node-group"),
]
