"""The training app's team actions and the least role allowed each (``accounts.access``).

Members read jobs and their logs; operators submit, resubmit and cancel jobs; admins create or attach the team's
MLflow tracking server.
"""

from accounts import access
from accounts.models import Role

VIEW = "training_job.view"
LOGS = "training_job.logs"
SUBMIT = "training_job.submit"
CANCEL = "training_job.cancel"
MLFLOW_VIEW = "mlflow.view"
MLFLOW_MANAGE = "mlflow.manage"

for _action, _role in {VIEW: Role.VIEWER, LOGS: Role.VIEWER, SUBMIT: Role.OPERATOR, CANCEL: Role.OPERATOR,
                       MLFLOW_VIEW: Role.VIEWER, MLFLOW_MANAGE: Role.ADMIN}.items():
    access.register_team_action(_action, _role)
