"""The governance app's permission actions (``accounts.access``) and its audit-only action names.

Members of the cluster's team read its scheduler config and compute quotas; its admins set them.
"""

from accounts.models import Role

VIEW = "governance.view"
MANAGE = "governance.manage"

#: Recorded in the audit trail under the ``governance.manage`` permission.
SCHEDULER_SET = "scheduler_config.set"
SCHEDULER_DELETE = "scheduler_config.delete"
QUOTA_CREATE = "compute_quota.create"
QUOTA_UPDATE = "compute_quota.update"
QUOTA_DELETE = "compute_quota.delete"

TEAM_ACTIONS: dict[str, Role] = {
    VIEW: Role.VIEWER,
    MANAGE: Role.ADMIN,
}
