"""REST routes of the node slice (mounted under /api/v1 by clusters.api.urls)."""

from django.urls import path

from clusters.api import node_views as views

urlpatterns: list = [
    path("clusters/<id:cluster_id>/nodes", views.NodeListView.as_view(), name="api-cluster-nodes"),
    path("clusters/<id:cluster_id>/nodes/reboot", views.NodeRebootView.as_view(), name="api-cluster-nodes-reboot"),
    path("clusters/<id:cluster_id>/nodes/replace", views.NodeReplaceView.as_view(),
         name="api-cluster-nodes-replace"),
    path("clusters/<id:cluster_id>/nodes/delete", views.NodeDeleteView.as_view(), name="api-cluster-nodes-delete"),
]
