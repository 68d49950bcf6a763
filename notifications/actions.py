"""The notifications app's permission actions (``accounts.access``): members read their team's subscriptions and
delivery logs; team admins create, change, delete and test them."""

from accounts.models import Role

SUBSCRIPTION_VIEW = "notification_subscription.view"
SUBSCRIPTION_CREATE = "notification_subscription.create"
SUBSCRIPTION_UPDATE = "notification_subscription.update"
SUBSCRIPTION_DELETE = "notification_subscription.delete"
SUBSCRIPTION_TEST = "notification_subscription.test"

#: Recorded in the audit trail only (actor: the system): a subscription disabled after repeated failed deliveries.
SUBSCRIPTION_DISABLE = "notification_subscription.disable"

TEAM_ACTIONS: dict[str, Role] = {
    SUBSCRIPTION_VIEW: Role.VIEWER,
    SUBSCRIPTION_CREATE: Role.ADMIN,
    SUBSCRIPTION_UPDATE: Role.ADMIN,
    SUBSCRIPTION_DELETE: Role.ADMIN,
    SUBSCRIPTION_TEST: Role.ADMIN,
}
