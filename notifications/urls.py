from django.urls import include, path

urlpatterns = [
    path("", include("notifications.subscription_urls")),
]
