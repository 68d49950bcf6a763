"""What ``training_job.submit`` would do, for a dry run's plan (``Phase.plan``): the job row the service checked and
built (rolled back after) carries the manifest the *create* phase would send, and its namespace says whether the
*identity* phase gives a task-governance namespace the checkpoint ServiceAccount, role and pod identity association
(each listed ``when: absent``: the phase sends only what is missing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusters.features import checkpointing, identity
from clusters.ownership import team_namespace
from clusters.plans import manifest
from config.plans import Change, aws_call, change, kubernetes_object
from training import metrics
from training.models import TrainingJob


def _job(params: Mapping[str, Any]) -> TrainingJob:
    return TrainingJob.objects.select_related("cluster", "team").get(pk=params["job_id"])


def _checkpoint_identity(job: TrainingJob) -> list[Change]:
    cluster, namespace = job.cluster, job.namespace
    role = checkpointing.namespace_role(cluster, namespace=namespace, team=job.team)
    role_arn = identity.role_arn(cluster, role.purpose)
    return [
        change("create", "aws", "IAM role", role_arn.rsplit("/", 1)[-1], trust=role.trust, policy=role.policy,
               when="absent"),
        kubernetes_object("create", manifest(checkpointing.namespace_service_account_body(cluster, namespace)),
                          when="absent"),
        aws_call("create", "EKS pod identity association", f"{namespace}/{checkpointing.SERVICE_ACCOUNT}",
                 call="eks:CreatePodIdentityAssociation", when="absent",
                 request=checkpointing.association_request(cluster, namespace=namespace, role_arn=role_arn)),
    ]


def identity_plan(params: Mapping[str, Any]) -> list[Change]:
    job = _job(params)
    account = params["service_account"]
    changes = []
    if job.namespace != team_namespace(job.team) and account == checkpointing.SERVICE_ACCOUNT:
        changes += _checkpoint_identity(job)
    if metrics.reports_to_mlflow(job):
        changes.append(change("update", "aws", "IAM role policy", f"MLflow writes for {job.namespace}/{account}",
                              cluster=job.cluster.name))
    return changes


def create(params: Mapping[str, Any]) -> list[Change]:
    job = _job(params)
    return [change("create", "kubernetes", job.object_kind, f"{job.namespace}/{job.name}", manifest=job.manifest)]


SUBMIT = {"identity": identity_plan, "create": create}
