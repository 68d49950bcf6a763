"""Portal routes of managed endpoints (included at the site root by ``inference.urls``); once made, a managed
endpoint's page is the endpoints' (``inference.endpoint_urls``)."""

from django.urls import path

from inference.views import managed_endpoints

urlpatterns = [
    path("inference/managed-endpoints/new/", managed_endpoints.managed_endpoint_create,
         name="inference-managed-endpoint-create"),
]
