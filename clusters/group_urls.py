"""Portal routes of instance groups (appended to clusters.urls)."""

from django.urls import path

from clusters.views import groups

urlpatterns = [
    path("clusters/<id:cluster_id>/groups/new/", groups.group_add, name="cluster-group-add"),
    path("clusters/<id:cluster_id>/groups/<str:name>/change/", groups.group_change, name="cluster-group-change"),
    path("clusters/<id:cluster_id>/groups/<str:name>/delete/", groups.group_delete, name="cluster-group-delete"),
]
