"""What a training job needs to report to its team's tracking server: the environment its containers get, and the
IAM permission for the pods' service account to write runs. The job submit operation calls both on every submit
(both are cheap and idempotent).

Environment (``job_env``) — the ``sagemaker-mlflow`` plugin's convention: ``MLFLOW_TRACKING_URI`` is the server's
ARN (the plugin turns it into the regional endpoint and signs with the pod's AWS credentials),
``MLFLOW_EXPERIMENT_NAME`` is ``<team slug>/<cluster name>`` (job names are unique per cluster and team namespace,
so a run name never means two jobs), ``MLFLOW_RUN_NAME`` is the job's name.

Permission (``grant_job_writes``) — :data:`WRITER_ACTIONS` on exactly the server's ARN, given to the service account
``service_account`` of the job's namespace (the team namespace, or the task-governance namespace ``hyperpod-ns-<team>``
of a queued job):

* a service account annotated ``eks.amazonaws.com/role-arn`` (IRSA, e.g. tiered checkpointing's
  ``instantstart-checkpoints``): inline policy ``instantstart-mlflow`` on that role;
* one with an EKS Pod Identity association already: the same inline policy on the associated role;
* otherwise (the ``default`` service account): a role ``instantstart-<cluster id>-mlflow`` (``-mlflow-<sa>`` for
  another account; in a namespace other than the team's, followed by ``-<namespace digest>``,
  :func:`clusters.pod_identity.namespaced_purpose`) trusting ``pods.eks.amazonaws.com`` (``sts:AssumeRole`` +
  ``sts:TagSession``, this cluster, this namespace and service account only) with inline policy named like its
  purpose, and a pod identity association to it, tagged as ours.

Only roles InstantStart made for the cluster are changed: a foreign role is ``service_account_role_foreign`` (409).
"""

from __future__ import annotations

from botocore.exceptions import ClientError
from kubernetes.client.exceptions import ApiException

from accounts.models import Team
from cloud import aws, kube
from clusters import pod_identity, storage
from clusters.features import identity
from clusters.iam_roles import ensure_inline_policy
from clusters.ownership import aws_tags, iam_name, owned_by, team_namespace
from config.errors import Conflict
from training.mlflow.selectors import team_tracking_server
from training.models import TrainingJob

WRITER_ACTIONS = (
    "sagemaker-mlflow:CreateExperiment", "sagemaker-mlflow:GetExperiment", "sagemaker-mlflow:GetExperimentByName",
    "sagemaker-mlflow:SearchExperiments", "sagemaker-mlflow:CreateRun", "sagemaker-mlflow:UpdateRun",
    "sagemaker-mlflow:GetRun", "sagemaker-mlflow:SearchRuns", "sagemaker-mlflow:LogMetric",
    "sagemaker-mlflow:LogParam", "sagemaker-mlflow:LogBatch", "sagemaker-mlflow:LogInputs",
    "sagemaker-mlflow:SetTag", "sagemaker-mlflow:GetMetricHistory", "sagemaker-mlflow:LogModel",
    "sagemaker-mlflow:ListArtifacts",
)
POLICY_NAME = "instantstart-mlflow"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"


def experiment_name(job: TrainingJob) -> str:
    return f"{job.team.slug}/{job.cluster.name}"


def job_env(*, job: TrainingJob) -> dict[str, str]:
    """The MLflow variables for the job's containers; ``{}`` when its team has no ready server in the cluster's
    region (the chart then shows throughput parsed from the logs)."""
    server = team_tracking_server(job.team_id, job.cluster.region)
    if server is None:
        return {}
    return {"MLFLOW_TRACKING_URI": server.arn, "MLFLOW_EXPERIMENT_NAME": experiment_name(job),
            "MLFLOW_RUN_NAME": job.name}


def writer_policy(server_arn: str) -> dict:
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "WriteRuns", "Effect": "Allow", "Action": list(WRITER_ACTIONS), "Resource": [server_arn]}]}


def purpose(service_account: str, namespace: str = "", team: Team | None = None) -> str:
    """The purpose of the MLflow role of ``service_account`` in ``namespace`` (default: ``team``'s namespace)."""
    base = "mlflow" if service_account == "default" else f"mlflow-{service_account}"
    if not namespace or team is None or namespace == team_namespace(team):
        return base
    return pod_identity.namespaced_purpose(base, namespace)


def grant_job_writes(*, cluster, team: Team, service_account: str, namespace: str = "") -> None:
    """Let pods running as ``service_account`` in ``namespace`` (default: the team namespace) of ``cluster`` write
    to the team's ready tracking server of the cluster's region (nothing when there is none). Idempotent: only what
    differs is sent."""
    server = team_tracking_server(team, cluster.region)
    if server is None:
        return
    policy = writer_policy(server.arn)
    namespace = namespace or team_namespace(team)
    role_purpose = purpose(service_account, namespace, team)
    annotated = _annotated_role(cluster, namespace, service_account)
    if annotated:
        _put_policy(cluster, annotated.rsplit("/", 1)[-1], policy)
        return
    associated = pod_identity.find_association(cluster, namespace=namespace, service_account=service_account)
    ours = iam_name(cluster, role_purpose)
    if associated is not None and associated["roleArn"].rsplit("/", 1)[-1] != ours:
        _put_policy(cluster, associated["roleArn"].rsplit("/", 1)[-1], policy)
        return
    role_arn = identity.ensure_role(
        cluster, purpose=role_purpose, policy=policy,
        trust=identity.pod_identity_trust(cluster, namespace=namespace, service_account=service_account),
        description=f"InstantStart: MLflow writes of {namespace}/{service_account} on {cluster.name}")
    if associated is None:
        eks = aws.client("eks", region=cluster.region)
        with aws.translated("eks", "CreatePodIdentityAssociation"):
            try:
                eks.create_pod_identity_association(clusterName=cluster.eks_name, namespace=namespace,
                                                    serviceAccount=service_account, roleArn=role_arn,
                                                    tags=aws_tags(cluster, role_purpose))
            except ClientError as error:
                if not aws.error_is(error, "ResourceInUseException"):
                    raise


def _annotated_role(cluster, namespace: str, service_account: str) -> str:
    try:
        found = storage.core_api(cluster).read_namespaced_service_account(service_account, namespace)
    except ApiException as error:
        if error.status == 404:
            return ""
        raise
    return (kube.meta(found).annotations or {}).get(ROLE_ANNOTATION, "")


def _put_policy(cluster, role: str, policy: dict) -> None:
    """Inline policy :data:`POLICY_NAME` on ``role`` (a role of ours for ``cluster``), sent only when it differs."""
    iam = aws.client("iam", region=cluster.region)
    with aws.translated("iam", "PutRolePolicy"):
        if not owned_by(iam.list_role_tags(RoleName=role)["Tags"], cluster):
            raise Conflict(f"The service account's IAM role {role} is not InstantStart's; grant it MLflow access "
                           "yourself.", code="service_account_role_foreign")
        ensure_inline_policy(iam, role, POLICY_NAME, policy)
