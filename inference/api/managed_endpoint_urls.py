"""REST routes of managed inference endpoints (mounted under /api/v1)."""

from django.urls import path

from inference.api import managed_endpoint_views

urlpatterns = [
    path("managed-endpoints", managed_endpoint_views.ManagedEndpointListCreateView.as_view(),
         name="api-managed-endpoints"),
    path("managed-endpoints/<id:endpoint_id>", managed_endpoint_views.ManagedEndpointDetailView.as_view(),
         name="api-managed-endpoint"),
    path("managed-endpoints/<id:endpoint_id>/delete", managed_endpoint_views.ManagedEndpointDeleteView.as_view(),
         name="api-managed-endpoint-delete"),
]
