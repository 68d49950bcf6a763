"""The training app's permission actions (``accounts.access``) and its audit-only action names.

Members read jobs and their logs; operators submit, resubmit and cancel jobs and upload files into the team's
part of the shared bucket; admins create or attach the team's
MLflow tracking server.
"""

from accounts.models import Role

VIEW = "training_job.view"
LOGS = "training_job.logs"
SUBMIT = "training_job.submit"
CANCEL = "training_job.cancel"
UPLOAD = "shared_file.upload"
MLFLOW_VIEW = "mlflow.view"
MLFLOW_MANAGE = "mlflow.manage"

#: Recorded in the audit trail under the ``mlflow.manage`` permission.
MLFLOW_CREATE = "mlflow.create"
MLFLOW_ATTACH = "mlflow.attach"
MLFLOW_DETACH = "mlflow.detach"
MLFLOW_DELETE = "mlflow.delete"
#: Recorded in the audit trail under the ``shared_file.upload`` permission (a multipart upload finished or dropped).
UPLOAD_COMPLETE = "shared_file.upload_complete"
UPLOAD_ABORT = "shared_file.upload_abort"

TEAM_ACTIONS: dict[str, Role] = {
    VIEW: Role.VIEWER,
    LOGS: Role.VIEWER,
    SUBMIT: Role.OPERATOR,
    CANCEL: Role.OPERATOR,
    UPLOAD: Role.OPERATOR,
    MLFLOW_VIEW: Role.VIEWER,
    MLFLOW_MANAGE: Role.ADMIN,
}
