"""REST routes of training jobs and recipes (mounted under /api/v1)."""

from django.urls import path

from training.api import job_views

urlpatterns = [
    path("training-recipes", job_views.RecipeListView.as_view(), name="api-training-recipes"),
    path("training-jobs", job_views.JobListCreateView.as_view(), name="api-training-jobs"),
    path("training-jobs/<id:job_id>", job_views.JobDetailView.as_view(), name="api-training-job"),
    path("training-jobs/<id:job_id>/cancel", job_views.JobCancelView.as_view(), name="api-training-job-cancel"),
    path("training-jobs/<id:job_id>/resubmit", job_views.JobResubmitView.as_view(),
         name="api-training-job-resubmit"),
    path("clusters/<id:cluster_id>/shared-files", job_views.SharedFilesView.as_view(),
         name="api-cluster-shared-files"),
    path("clusters/<id:cluster_id>/shared-files/uploads", job_views.SharedUploadView.as_view(),
         name="api-cluster-shared-files-upload"),
    path("clusters/<id:cluster_id>/shared-files/multipart-uploads", job_views.MultipartStartView.as_view(),
         name="api-cluster-shared-files-multipart"),
    path("clusters/<id:cluster_id>/shared-files/multipart-uploads/complete", job_views.MultipartCompleteView.as_view(),
         name="api-cluster-shared-files-multipart-complete"),
    path("clusters/<id:cluster_id>/shared-files/multipart-uploads/abort", job_views.MultipartAbortView.as_view(),
         name="api-cluster-shared-files-multipart-abort"),
]
