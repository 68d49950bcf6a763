"""The clusters app's permission actions (``accounts.access``) and its audit-only action names.

Members see clusters, volumes, instance groups, nodes and managed features, make a cluster their active one and
inspect what AWS offers; operators refresh clusters, create and delete shared volumes and reboot or replace
nodes; admins create, import and delete clusters, shape instance groups and EKS node groups, change cluster
settings and managed features, and delete nodes. Platform admins (not a team role) set each team's import rules and
alone delete the AWS resources of an imported cluster.
"""

from accounts.models import Role

CLUSTER_VIEW = "cluster.view"
CLUSTER_ACTIVATE = "cluster.activate"
CLUSTER_INSPECT = "cluster.inspect"
CLUSTER_REFRESH = "cluster.refresh"
CLUSTER_CREATE = "cluster.create"
CLUSTER_IMPORT = "cluster.import"
CLUSTER_DELETE = "cluster.delete"
CLUSTER_SETTINGS = "cluster.settings"
STORAGE_VIEW = "storage.view"
STORAGE_CREATE = "storage.create"
STORAGE_DELETE = "storage.delete"
INSTANCE_GROUP_VIEW = "instance_group.view"
INSTANCE_GROUP_CREATE = "instance_group.create"
INSTANCE_GROUP_UPDATE = "instance_group.update"
INSTANCE_GROUP_DELETE = "instance_group.delete"
NODE_VIEW = "node.view"
NODE_REBOOT = "node.reboot"
NODE_REPLACE = "node.replace"
NODE_DELETE = "node.delete"
FEATURE_VIEW = "feature.view"
FEATURE_UPDATE = "feature.update"
NODE_GROUP_VIEW = "node_group.view"
NODE_GROUP_SCALE = "node_group.scale"
NODE_GROUP_DELETE = "node_group.delete"
#: A team's import rules: its members read them; only platform admins create and delete them
#: (``access.require_platform_admin``), recorded under the names below.
IMPORT_RULE_VIEW = "import_rule.view"
IMPORT_RULE_CREATE = "import_rule.create"
IMPORT_RULE_DELETE = "import_rule.delete"

#: Recorded in the audit trail under ``cluster.delete`` / ``cluster.settings`` permission.
CLUSTER_FORGET = "cluster.forget"
CLUSTER_SOFTWARE_UPDATE = "cluster.software_update"

TEAM_ACTIONS: dict[str, Role] = {
    CLUSTER_VIEW: Role.VIEWER,
    CLUSTER_ACTIVATE: Role.VIEWER,
    CLUSTER_INSPECT: Role.VIEWER,
    CLUSTER_REFRESH: Role.OPERATOR,
    CLUSTER_CREATE: Role.ADMIN,
    CLUSTER_IMPORT: Role.ADMIN,
    CLUSTER_DELETE: Role.ADMIN,
    CLUSTER_SETTINGS: Role.ADMIN,
    STORAGE_VIEW: Role.VIEWER,
    STORAGE_CREATE: Role.OPERATOR,
    STORAGE_DELETE: Role.OPERATOR,
    INSTANCE_GROUP_VIEW: Role.VIEWER,
    INSTANCE_GROUP_CREATE: Role.ADMIN,
    INSTANCE_GROUP_UPDATE: Role.ADMIN,
    INSTANCE_GROUP_DELETE: Role.ADMIN,
    NODE_VIEW: Role.VIEWER,
    NODE_REBOOT: Role.OPERATOR,
    NODE_REPLACE: Role.OPERATOR,
    NODE_DELETE: Role.ADMIN,
    FEATURE_VIEW: Role.VIEWER,
    FEATURE_UPDATE: Role.ADMIN,
    NODE_GROUP_VIEW: Role.VIEWER,
    NODE_GROUP_SCALE: Role.ADMIN,
    NODE_GROUP_DELETE: Role.ADMIN,
    IMPORT_RULE_VIEW: Role.VIEWER,
}

#: The actions a team may hold for an admin's approval when an agent requests them through MCP
#: (``operations.approvals``), each → whether a new team's policy holds it by default.
APPROVABLE_ACTIONS: dict[str, bool] = {
    CLUSTER_DELETE: True,
    INSTANCE_GROUP_DELETE: True,
    NODE_REPLACE: True,
    NODE_DELETE: True,
    NODE_REBOOT: False,
}
