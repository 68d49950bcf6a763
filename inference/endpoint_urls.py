"""Portal routes of endpoints (included at the site root by ``inference.urls``)."""

from django.urls import path

from inference.views import endpoints

urlpatterns = [
    path("inference/endpoints/", endpoints.endpoint_list, name="inference-endpoints"),
    path("inference/endpoints/new/", endpoints.endpoint_deploy, name="inference-endpoint-deploy"),
    path("inference/endpoints/new/estimate/", endpoints.endpoint_estimate, name="inference-endpoint-estimate"),
    path("inference/endpoints/<id:endpoint_id>/", endpoints.endpoint_detail, name="inference-endpoint"),
    path("inference/endpoints/<id:endpoint_id>/update/", endpoints.endpoint_update,
         name="inference-endpoint-update"),
    path("inference/endpoints/<id:endpoint_id>/autoscaling/", endpoints.endpoint_autoscaling,
         name="inference-endpoint-autoscaling"),
    path("inference/endpoints/<id:endpoint_id>/delete/", endpoints.endpoint_delete,
         name="inference-endpoint-delete"),
    path("inference/endpoints/<id:endpoint_id>/playground/", endpoints.endpoint_playground,
         name="inference-playground"),
    path("inference/endpoints/<id:endpoint_id>/playground/stream/", endpoints.endpoint_stream,
         name="inference-playground-stream"),
]
