"""The ``cluster.features:…`` pipelines: one operation per accepted diff, touching only the differing features.

An operation's kind names its phases by their letter (:data:`CODES`) — ``cluster.features:p+t+a`` is
prerequisites, training operator, autoscaling — so its timeline shows exactly the work it does:
*prerequisites* (when a feature being enabled needs cluster dependencies:
absent ones are installed, and the phase waits until all are ACTIVE), then one phase per changed feature in
catalog order, each enabling or disabling it as ``params["changes"][slug]["enabled"]`` says. Every combination
has a pipeline (:func:`all_pipelines`), declared in ``clusters.pipelines``.

A feature's row is ``enabling``/``disabling`` while its phase runs; the phase records what it observes when it
finishes; a failed or cancelled operation leaves the rows it did not finish ``failed`` with its error. Retry
reruns the failed phase alone (add-on phases replace a failed add-on of ours).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from itertools import combinations

from django.utils import timezone

from clusters import dependencies
from clusters.features import (
    autoscaling,
    checkpointing,
    inference,
    load_balancer,
    observability,
    plans,
    prerequisites,
    task_governance,
    training,
)
from clusters.features.catalog import (
    AUTOSCALING,
    FEATURES,
    INFERENCE_OPERATOR,
    LOAD_BALANCER_CONTROLLER,
    METRICS_SERVER,
    OBSERVABILITY,
    ORDER,
    TASK_GOVERNANCE,
    TIERED_CHECKPOINTING,
    TRAINING_OPERATOR,
)
from clusters.features.observe import observe_one, record
from clusters.models import Cluster, ClusterFeature, FeatureState
from clusters.ownership import owned_by
from clusters.phases.common import cluster_of
from operations.context import StepContext
from operations.models import Operation, OperationState
from operations.pipeline import Phase, Pipeline, Progress

KIND_PREFIX = "cluster.features"
PREREQUISITES = "prerequisites"
#: phase slug → its letter in an operation kind (``Operation.kind`` is short)
CODES = {PREREQUISITES: "p", TRAINING_OPERATOR: "t", INFERENCE_OPERATOR: "i", OBSERVABILITY: "o",
         TIERED_CHECKPOINTING: "c", AUTOSCALING: "a", LOAD_BALANCER_CONTROLLER: "l", TASK_GOVERNANCE: "g"}

Steps = tuple[Callable[[StepContext, Cluster], None], Callable[[StepContext, Cluster], Progress]]


def _inference_disable_poll(ctx: StepContext, cluster: Cluster) -> Progress:
    """The add-on and its role, then ``metrics-server`` when enabling installed it and no other feature needs it."""
    progress = inference.FEATURE.poll_disable(ctx, cluster)
    row = ClusterFeature.objects.filter(cluster=cluster, feature=INFERENCE_OPERATOR).first()
    if not progress.done or row is None or METRICS_SERVER not in row.details.get("installed_prerequisites", []):
        return progress
    addon = dependencies.describe_addon(cluster, METRICS_SERVER)
    if addon is not None and owned_by(addon.get("tags"), cluster):
        if addon["status"] != "DELETING":
            ctx.log(f"Removing the EKS add-on {METRICS_SERVER} the inference operator needed.")
            dependencies.replace_addon(cluster, METRICS_SERVER)
        return Progress.waiting(f"{METRICS_SERVER} {addon['status']}")
    return progress


STEPS: dict[str, dict[bool, Steps]] = {
    TRAINING_OPERATOR: {True: (training.FEATURE.submit_enable, training.FEATURE.poll_enable),
                        False: (training.FEATURE.submit_disable, training.FEATURE.poll_disable)},
    INFERENCE_OPERATOR: {True: (inference.FEATURE.submit_enable, inference.FEATURE.poll_enable),
                         False: (inference.FEATURE.submit_disable, _inference_disable_poll)},
    OBSERVABILITY: {True: (observability.submit_enable, observability.poll_enable),
                    False: (observability.submit_disable, observability.poll_disable)},
    TIERED_CHECKPOINTING: {True: (checkpointing.submit_enable, checkpointing.poll_enable),
                           False: (checkpointing.submit_disable, checkpointing.poll_disable)},
    AUTOSCALING: {True: (autoscaling.submit_enable, autoscaling.poll_enable),
                  False: (autoscaling.submit_disable, autoscaling.poll_disable)},
    LOAD_BALANCER_CONTROLLER: {True: (load_balancer.submit_enable, load_balancer.poll_enable),
                               False: (load_balancer.submit_disable, load_balancer.poll_disable)},
    TASK_GOVERNANCE: {True: (task_governance.submit_enable, task_governance.poll_enable),
                      False: (task_governance.submit_disable, task_governance.poll_disable)},
}


def _feature_phase(slug: str) -> Phase:
    def wanted(ctx: StepContext) -> bool:
        return bool(ctx.params["changes"][slug]["enabled"])

    def submit(ctx: StepContext) -> None:
        STEPS[slug][wanted(ctx)][0](ctx, cluster_of(ctx))

    def poll(ctx: StepContext) -> Progress:
        cluster = cluster_of(ctx)
        progress = STEPS[slug][wanted(ctx)][1](ctx, cluster)
        if progress.done:
            row, = record(cluster, [observe_one(cluster, slug)], keep_transitions=False)
            installed = [name for name in ctx.outputs.get("installed_prerequisites", [])
                         if name in FEATURES[slug].prerequisites and name in prerequisites.EXTRA]
            if installed and wanted(ctx):
                row.details = {**row.details, "installed_prerequisites": installed}
                row.save(update_fields=["details", "updated_at"])
        return progress

    return Phase(slug=slug, title=FEATURES[slug].title, submit=submit, poll=poll, plan=plans.feature(slug),
                 timeout=timedelta(minutes=45), poll_interval=10)


PREREQUISITES_PHASE = Phase(slug=PREREQUISITES, title="Prerequisites", submit=prerequisites.submit,
                            poll=prerequisites.poll, plan=plans.prerequisites_plan, timeout=timedelta(minutes=30),
                            poll_interval=10)


def phases_for(changes: dict[str, dict]) -> list[str]:
    """The phase slugs of an operation making ``changes`` (features in catalog order)."""
    slugs = [slug for slug in ORDER if slug in changes]
    enabling = [slug for slug in slugs if changes[slug]["enabled"] and FEATURES[slug].prerequisites]
    return ([PREREQUISITES] if enabling else []) + slugs


def kind_of(slugs: list[str]) -> str:
    return f"{KIND_PREFIX}:{'+'.join(CODES[slug] for slug in slugs)}"


def kind_for(changes: dict[str, dict]) -> str:
    return kind_of(phases_for(changes))


def _finished(operation: Operation) -> None:
    """Rows a failed or cancelled operation left changing are ``failed`` with its error."""
    if operation.state == OperationState.SUCCEEDED:
        return
    ClusterFeature.objects.filter(
        cluster_id=operation.params["cluster_id"], feature__in=list(operation.params["changes"]),
        state__in=[FeatureState.ENABLING, FeatureState.DISABLING],
    ).update(state=FeatureState.FAILED, last_error=operation.error_message or operation.state,
             updated_at=timezone.now())


def _retried(operation: Operation) -> None:
    """A retried operation puts its unfinished features back to changing."""
    for slug, change in operation.params["changes"].items():
        ClusterFeature.objects.filter(cluster_id=operation.params["cluster_id"], feature=slug,
                                      state=FeatureState.FAILED).update(
            state=FeatureState.ENABLING if change["enabled"] else FeatureState.DISABLING, last_error="",
            updated_at=timezone.now())


def all_pipelines() -> tuple[Pipeline, ...]:
    """One pipeline per subset of the catalog's features (in catalog order), with and without the prerequisites
    phase when a feature of the subset has prerequisites: whatever one request changes has a kind."""
    pipelines = []
    for size in range(1, len(ORDER) + 1):
        for subset in combinations(ORDER, size):
            needs = any(FEATURES[slug].prerequisites for slug in subset)
            for with_prerequisites in ((False, True) if needs else (False,)):
                phases = ([PREREQUISITES_PHASE] if with_prerequisites else []) + [
                    _feature_phase(slug) for slug in subset]
                pipelines.append(Pipeline(kind=kind_of([phase.slug for phase in phases]), phases=tuple(phases),
                                          on_finished=_finished, on_retried=_retried))
    return tuple(pipelines)
