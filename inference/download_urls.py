"""Portal routes of models and model downloads (included at the site root by ``inference.urls``)."""

from django.urls import path

from inference.views import downloads

urlpatterns = [
    path("inference/models/", downloads.model_list, name="inference-models"),
    path("inference/models/download/", downloads.download_start, name="inference-model-download"),
    path("inference/downloads/<id:download_id>/cancel/", downloads.download_cancel,
         name="inference-download-cancel"),
]
