"""Portal routes of training jobs (included at the site root by ``training.urls``): the list, the submit page, a
job's page with its Cancel and Resubmit posts, and the submit form's shared-bucket browser partial. ``training/``
itself (the Training link of the navigation) opens the jobs list."""

from django.urls import path
from django.views.generic import RedirectView

from training.views import jobs, shared, submit

urlpatterns = [
    path("training/", RedirectView.as_view(pattern_name="training-jobs"), name="training"),
    path("training/jobs/", jobs.job_list, name="training-jobs"),
    path("training/jobs/new/", submit.job_submit, name="training-job-submit"),
    path("training/jobs/<id:job_id>/", jobs.job_detail, name="training-job"),
    path("training/jobs/<id:job_id>/cancel/", jobs.job_cancel, name="training-job-cancel"),
    path("training/jobs/<id:job_id>/resubmit/", jobs.job_resubmit, name="training-job-resubmit"),
    path("training/clusters/<id:cluster_id>/shared-files/", shared.shared_browser, name="training-shared-files"),
    path("training/clusters/<id:cluster_id>/shared-files/upload", shared.shared_upload,
         name="training-shared-upload"),
]
