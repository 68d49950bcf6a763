"""REST routes of inference endpoints (mounted under /api/v1)."""

from django.urls import path

from inference.api import endpoint_views

urlpatterns = [
    path("endpoints", endpoint_views.EndpointListCreateView.as_view(), name="api-endpoints"),
    path("endpoints/<id:endpoint_id>", endpoint_views.EndpointDetailView.as_view(), name="api-endpoint"),
    path("endpoints/<id:endpoint_id>/delete", endpoint_views.EndpointDeleteView.as_view(),
         name="api-endpoint-delete"),
    path("endpoints/<id:endpoint_id>/autoscaling", endpoint_views.EndpointAutoscalingView.as_view(),
         name="api-endpoint-autoscaling"),
    path("endpoints/<id:endpoint_id>/autoscaling/disable", endpoint_views.EndpointAutoscalingDisableView.as_view(),
         name="api-endpoint-autoscaling-disable"),
    path("endpoints/<id:endpoint_id>/router", endpoint_views.EndpointRouterView.as_view(), name="api-endpoint-router"),
    path("endpoints/<id:endpoint_id>/models", endpoint_views.EndpointModelsView.as_view(),
         name="api-endpoint-models"),
    path("endpoints/<id:endpoint_id>/chat", endpoint_views.EndpointChatView.as_view(), name="api-endpoint-chat"),
]
