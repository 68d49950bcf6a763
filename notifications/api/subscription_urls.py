from django.urls import path

from notifications.api import subscription_views as views

urlpatterns = [
    path("teams/<id:team_id>/notification-subscriptions", views.SubscriptionListView.as_view(),
         name="api-notification-subscriptions"),
    path("teams/<id:team_id>/notification-subscriptions/<id:subscription_id>", views.SubscriptionDetailView.as_view(),
         name="api-notification-subscription"),
    path("teams/<id:team_id>/notification-subscriptions/<id:subscription_id>/test",
         views.SubscriptionTestView.as_view(), name="api-notification-subscription-test"),
    path("teams/<id:team_id>/notification-subscriptions/<id:subscription_id>/deliveries",
         views.DeliveryListView.as_view(), name="api-notification-deliveries"),
]
