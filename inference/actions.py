"""The inference app's permission actions (``accounts.access``).

Members see endpoints, model pools, downloads and the models in the team's bucket, and call endpoints (a chat call
changes nothing); operators deploy, scale, update and delete endpoints, run model pools and move their workers,
and start and cancel model downloads.
"""

from accounts.models import Role

ENDPOINT_VIEW = "endpoint.view"
ENDPOINT_DEPLOY = "endpoint.deploy"
ENDPOINT_UPDATE = "endpoint.update"
ENDPOINT_DELETE = "endpoint.delete"
ENDPOINT_CALL = "endpoint.call"
POOL_VIEW = "model_pool.view"
POOL_MANAGE = "model_pool.manage"
DOWNLOAD_VIEW = "model_download.view"
DOWNLOAD_START = "model_download.start"
DOWNLOAD_CANCEL = "model_download.cancel"

#: Recorded in the audit trail under the ``model_pool.manage`` permission.
POOL_CREATE = "model_pool.create"
POOL_ASSIGN = "model_pool.assign"
POOL_DELETE = "model_pool.delete"

TEAM_ACTIONS: dict[str, Role] = {
    ENDPOINT_VIEW: Role.VIEWER,
    ENDPOINT_DEPLOY: Role.OPERATOR,
    ENDPOINT_UPDATE: Role.OPERATOR,
    ENDPOINT_DELETE: Role.OPERATOR,
    ENDPOINT_CALL: Role.VIEWER,
    POOL_VIEW: Role.VIEWER,
    POOL_MANAGE: Role.OPERATOR,
    DOWNLOAD_VIEW: Role.VIEWER,
    DOWNLOAD_START: Role.OPERATOR,
    DOWNLOAD_CANCEL: Role.OPERATOR,
}

#: The actions a team may hold for an admin's approval when an agent requests them through MCP
#: (``operations.approvals``), each → whether a new team's policy holds it by default.
APPROVABLE_ACTIONS: dict[str, bool] = {
    ENDPOINT_DELETE: True,
}
