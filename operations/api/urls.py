from django.urls import include, path

from operations.api import views

urlpatterns = [
    path("operations", views.OperationListView.as_view(), name="api-operations"),
    path("operations/<id:operation_id>", views.OperationDetailView.as_view(), name="api-operation"),
    path("operations/<id:operation_id>/phases", views.OperationPhaseListView.as_view(), name="api-operation-phases"),
    path("operations/<id:operation_id>/logs", views.OperationLogListView.as_view(), name="api-operation-logs"),
    path("operations/<id:operation_id>/retry", views.OperationRetryView.as_view(), name="api-operation-retry"),
    path("operations/<id:operation_id>/cancel", views.OperationCancelView.as_view(), name="api-operation-cancel"),
    path("demo-operations", views.DemoOperationCreateView.as_view(), name="api-demo-operations"),
    path("", include("operations.api.approval_urls")),
]
