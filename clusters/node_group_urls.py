"""Portal routes of a cluster's EKS node groups (appended to clusters.urls)."""

from django.urls import path

from clusters.views import node_groups

urlpatterns = [
    path("clusters/<id:cluster_id>/node-groups/", node_groups.node_group_panel, name="cluster-node-groups"),
    path("clusters/<id:cluster_id>/node-groups/<str:name>/scale/", node_groups.node_group_scale,
         name="cluster-node-group-scale"),
    path("clusters/<id:cluster_id>/node-groups/<str:name>/delete/", node_groups.node_group_delete,
         name="cluster-node-group-delete"),
]
