from django.urls import include, path

urlpatterns = [
    path("", include("spending.api.spend_urls")),
    path("", include("spending.api.budget_urls")),
]
