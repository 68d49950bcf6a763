"""REST routes of model pools (mounted under /api/v1)."""

from django.urls import path

from inference.api import pool_views

urlpatterns = [
    path("model-pools", pool_views.PoolListCreateView.as_view(), name="api-model-pools"),
    path("model-pools/<id:pool_id>", pool_views.PoolDetailView.as_view(), name="api-model-pool"),
    path("model-pools/<id:pool_id>/assign", pool_views.PoolAssignView.as_view(), name="api-model-pool-assign"),
    path("model-pools/<id:pool_id>/endpoints", pool_views.PoolEndpointView.as_view(),
         name="api-model-pool-endpoints"),
    path("model-pools/<id:pool_id>/delete", pool_views.PoolDeleteView.as_view(), name="api-model-pool-delete"),
]
