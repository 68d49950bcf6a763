from django.urls import include, path

urlpatterns = [
    path("", include("notifications.api.subscription_urls")),
]
