"""Permission-matrix cases of notification subscriptions (added to tests.matrix.CASES): a team's members read its
subscriptions and delivery logs; its admins create, change, test and delete them."""

from tests.matrix import MEMBERS, Case, team

ADMINS = frozenset({"admin", "superuser"})


def subscription_of_team(cast, actor) -> dict:
    from tests import factories

    return {"team_id": cast.team.pk, "subscription_id": factories.subscription(cast.team).pk}


CASES = [
    Case("notification_subscriptions_list", MEMBERS, params=team),
    Case("notification_subscriptions_create", ADMINS, params=team,
         body={"name": "matrix", "event_types": ["operation.failed"], "channel": "email",
               "email": "oncall@example.com"}),
    Case("notification_subscriptions_retrieve", MEMBERS, params=subscription_of_team),
    Case("notification_subscriptions_update", ADMINS, params=subscription_of_team, body={"enabled": False}),
    Case("notification_subscriptions_destroy", ADMINS, params=subscription_of_team),
    Case("notification_subscriptions_test", ADMINS, params=subscription_of_team),
    Case("notification_deliveries_list", MEMBERS, params=subscription_of_team),
]
