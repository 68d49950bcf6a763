"""Notification portal URLs (mounted at the site root): the current team's subscriptions, one subscription with its
delivery log, and its buttons."""

from django.urls import path

from notifications.views import subscriptions

urlpatterns = [
    path("notifications/", subscriptions.subscription_list, name="notifications"),
    path("notifications/new/", subscriptions.subscription_create, name="notification-subscription-create"),
    path("notifications/<id:subscription_id>/", subscriptions.subscription_detail, name="notification-subscription"),
    path("notifications/<id:subscription_id>/edit/", subscriptions.subscription_update,
         name="notification-subscription-update"),
    path("notifications/<id:subscription_id>/test/", subscriptions.subscription_test,
         name="notification-subscription-test"),
    path("notifications/<id:subscription_id>/delete/", subscriptions.subscription_delete,
         name="notification-subscription-delete"),
]
