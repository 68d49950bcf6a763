"""The operations app's permission actions (``accounts.access``): members follow operations; operators retry and
cancel them and start the sandbox demo."""

from accounts.models import Role

OPERATION_VIEW = "operation.view"
OPERATION_RETRY = "operation.retry"
OPERATION_CANCEL = "operation.cancel"
OPERATION_DEMO = "operation.demo"

TEAM_ACTIONS: dict[str, Role] = {
    OPERATION_VIEW: Role.VIEWER,
    OPERATION_RETRY: Role.OPERATOR,
    OPERATION_CANCEL: Role.OPERATOR,
    OPERATION_DEMO: Role.OPERATOR,
}
