"""Portal routes of the node slice (appended to clusters.urls)."""

from django.urls import path

from clusters.node_actions import ACTIONS
from clusters.views import nodes

urlpatterns: list = [
    path("clusters/<id:cluster_id>/nodes/", nodes.node_list, name="cluster-nodes"),
    *[path(f"clusters/<id:cluster_id>/nodes/{action}/", nodes.node_batch, {"action": action},
           name=f"cluster-nodes-{action}") for action in ACTIONS],
]
