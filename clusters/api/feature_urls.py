"""REST routes of the feature slice (mounted under /api/v1 by clusters.api.urls)."""

from django.urls import path

from clusters.api import feature_views as views

urlpatterns = [
    path("clusters/<id:cluster_id>/features", views.ClusterFeaturesView.as_view(), name="api-cluster-features"),
    path("clusters/<id:cluster_id>/features/autoscaling/enable", views.AutoscalingEnableView.as_view(),
         name="api-cluster-autoscaling-enable"),
    path("clusters/<id:cluster_id>/features/autoscaling/disable", views.AutoscalingDisableView.as_view(),
         name="api-cluster-autoscaling-disable"),
]
