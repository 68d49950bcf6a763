"""Operations portal URLs (mounted at the site root)."""

from django.urls import path

from operations import views

urlpatterns = [
    path("operations/", views.operation_list, name="operations"),
    path("operations/demo/", views.operation_demo, name="operation-demo"),
    path("operations/<id:operation_id>/", views.operation_detail, name="operation-detail"),
    path("operations/<id:operation_id>/row/", views.operation_row, name="operation-row"),
    path("operations/<id:operation_id>/retry/", views.operation_retry, name="operation-retry"),
    path("operations/<id:operation_id>/cancel/", views.operation_cancel, name="operation-cancel"),
]
