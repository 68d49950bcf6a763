"""MCP tools of notification subscriptions: a team's members list them and read their delivery logs; its admins
subscribe the team to events (a signed webhook, Slack-compatible if asked, or an e-mail address), change, test and
delete them."""

from mcp_server.specs import PAGINATED, ToolSpec
from notifications import actions, events

_TYPES = ", ".join(events.EVENT_TYPES)

NOTIFICATION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_notification_subscriptions",
        operation_id="notification_subscriptions_list",
        action=actions.SUBSCRIPTION_VIEW,
        description=(
            "List a team's notification subscriptions: name, event types, channel (`webhook` or `email`), the URL "
            "or address, the webhook format, and whether each is `enabled` (`disabled_reason` says why not)."
        ),
    ),
    ToolSpec(
        name="get_notification_subscription",
        operation_id="notification_subscriptions_retrieve",
        action=actions.SUBSCRIPTION_VIEW,
        description=(
            "Read one notification subscription of a team (`subscription_id`): its settings, whether it is on, and "
            "how many deliveries in a row failed (at the deployment's limit it is turned off)."
        ),
    ),
    ToolSpec(
        name="create_notification_subscription",
        operation_id="notification_subscriptions_create",
        action=actions.SUBSCRIPTION_CREATE,
        status_tool="get_notification_subscription",
        description=(
            f"Subscribe a team to events ({_TYPES}) sent to a `webhook` (`url`, https; `format` `json` for the "
            "signed event, `slack` for a Slack incoming webhook's `{\"text\": …}`) or by `email` (`email`). A "
            "webhook's signing secret is in the answer only: give it to the user for their receiver. Then "
            "`send_test_notification` to check the destination."
        ),
    ),
    ToolSpec(
        name="update_notification_subscription",
        operation_id="notification_subscriptions_update",
        action=actions.SUBSCRIPTION_UPDATE,
        status_tool="get_notification_subscription",
        destructive=True,
        description=(
            "Change a notification subscription: `name`, `event_types`, `url` or `email`, `format`; `enabled` false "
            "turns it off, true turns it on again (its failure count restarts); `rotate_secret` gives a webhook a "
            "new signing secret (in the answer only; the old one stops at once)."
        ),
    ),
    ToolSpec(
        name="delete_notification_subscription",
        operation_id="notification_subscriptions_destroy",
        action=actions.SUBSCRIPTION_DELETE,
        status_tool="list_notification_subscriptions",
        destructive=True,
        description="Delete a notification subscription and its delivery log; nothing more is sent to it.",
    ),
    ToolSpec(
        name="send_test_notification",
        operation_id="notification_subscriptions_test",
        action=actions.SUBSCRIPTION_TEST,
        status_tool="list_notification_deliveries",
        description=(
            "Send a `notification.test` event to a subscription now, even while it is off. The answer is the queued "
            "delivery; read its outcome (status code, answer, error) with `list_notification_deliveries`."
        ),
    ),
    ToolSpec(
        name="list_notification_deliveries",
        operation_id="notification_deliveries_list",
        action=actions.SUBSCRIPTION_VIEW,
        description=(
            "Read a subscription's delivery log, newest first: each event sent (`payload`), its state (`pending` "
            "while retries remain, `succeeded`, `failed`) and every attempt's status code, response excerpt, "
            "duration and error." + PAGINATED
        ),
    ),
)
