"""Operations portal URLs (mounted at the site root): the list, the demo, an operation's page and its live row,
retry and cancel; the approvals page."""

from django.urls import include, path

from operations.views import pages

urlpatterns = [
    path("operations/", pages.operation_list, name="operations"),
    path("operations/demo/", pages.operation_demo, name="operation-demo"),
    path("operations/<id:operation_id>/", pages.operation_detail, name="operation-detail"),
    path("operations/<id:operation_id>/row/", pages.operation_row, name="operation-row"),
    path("operations/<id:operation_id>/retry/", pages.operation_retry, name="operation-retry"),
    path("operations/<id:operation_id>/cancel/", pages.operation_cancel, name="operation-cancel"),
    path("", include("operations.approval_urls")),
]
