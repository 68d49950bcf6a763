from django.urls import include, path

urlpatterns = [
    path("", include("spending.spend_urls")),
]
