"""The operations app's permission actions (``accounts.access``): members follow operations; operators retry and
cancel them and start the sandbox demo. Members see their team's approval requests; admins decide them and set the
team's approval policy."""

from accounts.models import Role

OPERATION_VIEW = "operation.view"
OPERATION_RETRY = "operation.retry"
OPERATION_CANCEL = "operation.cancel"
OPERATION_DEMO = "operation.demo"
APPROVAL_VIEW = "approval.view"
APPROVAL_DECIDE = "approval.decide"
APPROVAL_POLICY_UPDATE = "approval_policy.update"

#: Recorded in the audit trail only: an agent's request held for approval (actor: the requester), an approval
#: (actor: the approver; the event names the requester and the operation started) and a rejection.
APPROVAL_REQUEST = "approval.request"
APPROVAL_APPROVE = "approval.approve"
APPROVAL_REJECT = "approval.reject"

TEAM_ACTIONS: dict[str, Role] = {
    OPERATION_VIEW: Role.VIEWER,
    OPERATION_RETRY: Role.OPERATOR,
    OPERATION_CANCEL: Role.OPERATOR,
    OPERATION_DEMO: Role.OPERATOR,
    APPROVAL_VIEW: Role.VIEWER,
    APPROVAL_DECIDE: Role.ADMIN,
    APPROVAL_POLICY_UPDATE: Role.ADMIN,
}
