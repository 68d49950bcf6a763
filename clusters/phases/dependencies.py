"""The *dependencies* phase: the cluster's EKS add-ons, the KubeRay operator and HyperPod's required dependencies
(its chart's components, ``clusters.hyperpod_chart``), reconciled (``clusters.dependencies``) before the *hyperpod*
phase attaches HyperPod, as AWS requires for clusters set up through the APIs.

Create. Each step *reconciles*: it observes every component, installs the absent ones whose requirements are
active (pod identity agent and cert-manager come first), leaves everything else as found, and records the
ClusterDependency rows. An add-on is created with a ``clientRequestToken`` persisted (``ctx.intend``) before
CreateAddon is sent, one per component and phase attempt; a re-run finds the add-on with DescribeAddon and adopts
it, so nothing is sent twice. The poll step finishes when every component is active (the KubeRay operator may
wait for the cluster's first node, which the *hyperpod* phase brings), and fails the phase with
``dependency_failed`` — naming each component and AWS's health issue — when one is CREATE_FAILED, DEGRADED or
otherwise failed. A retry replaces only those: its submit step deletes each of our add-ons still failed
(persisting the ARN it replaces first, so a re-run never deletes the new one) and the reconciliation creates it
again once it is gone.

Delete. Both steps remove what we installed — add-ons with our tags, KubeRay objects with our labels — until
nothing of ours is left, then delete our pod identity roles and what the managed features made outside the
cluster (``clusters.features.leftovers``: their roles, the Prometheus workspace), and mark the rows absent.
Level-triggered: a re-run after a crash continues, and once everything is gone it does nothing.
"""

from __future__ import annotations

import functools
import uuid
from datetime import timedelta

from clusters import dependencies, pod_identity
from clusters.dependencies import Observation
from clusters.features import leftovers
from clusters.models import Cluster, ClusterDependency, DependencyKind, DependencyState
from clusters.phases.common import cluster_of
from operations.context import StepContext
from operations.pipeline import Phase, PhaseFailed, Progress


def _cluster(ctx: StepContext) -> Cluster:
    """The operation's cluster, with the EKS facts the *eks* phase left (outputs win over the row)."""
    cluster = cluster_of(ctx)
    cluster.eks_name = ctx.outputs.get("eks_name") or cluster.eks_name
    cluster.eks_arn = ctx.outputs.get("eks_arn") or cluster.eks_arn
    return cluster


def _install(ctx: StepContext, cluster: Cluster, component: dependencies.Component) -> Observation:
    if component.kind == DependencyKind.MANIFEST:
        ctx.log(f"Applying {component.name} {dependencies.manifest_version(component)}.")
        return dependencies.install_manifests(cluster, component)
    token = ctx.intend(f"addon_token:{component.name}:{ctx.attempt}", lambda: str(uuid.uuid4()))
    ctx.log(f"Installing the EKS add-on {component.name}.")
    return dependencies.install_addon(cluster, component, token=token)


def reconcile(ctx: StepContext, cluster: Cluster, *, prepare_roles: bool = False) -> dict[str, Observation]:
    """Observe, install what is absent and may be installed now, record the rows; returns the observations.

    ``prepare_roles`` first creates the pod identity roles of every add-on still to install, so that IAM has
    propagated them by the time their add-on (which waits for the pod identity agent) is created."""
    observations = {seen.component: seen for seen in dependencies.observe(cluster, strict=True)}
    for component in dependencies.ON_CREATE:
        if prepare_roles and component.identity is not None and observations[component.name].needs_install:
            pod_identity.ensure_role(cluster, component.identity)
    for component in dependencies.ON_CREATE:
        seen = observations[component.name]
        ready = all(observations[name].state == DependencyState.ACTIVE for name in component.requires)
        if not seen.needs_install or not ready:
            continue
        observations[component.name] = _install(ctx, cluster, component)
    dependencies.record(cluster, observations.values())
    return observations


def _replace_failed(ctx: StepContext, cluster: Cluster) -> None:
    """On a retry: delete each of our add-ons a previous attempt left failed, once per attempt."""
    for seen in dependencies.observe(cluster, strict=True):
        component = dependencies.COMPONENTS[seen.component]
        if not (component.on_create and seen.kind == DependencyKind.ADDON and seen.managed
                and seen.state in dependencies.PROBLEM_STATES):
            continue
        replacing = ctx.intend(f"replace:{seen.component}:{ctx.attempt}", functools.partial(str, seen.arn))
        if replacing == seen.arn:
            ctx.log(f"Replacing the EKS add-on {seen.component} ({seen.status}).")
            dependencies.replace_addon(cluster, seen.component)


def submit_dependencies(ctx: StepContext) -> None:
    cluster = _cluster(ctx)
    if not cluster.eks_name:
        raise PhaseFailed("The cluster has no EKS control plane yet.", code="eks_missing")
    if ctx.attempt > 1:
        _replace_failed(ctx, cluster)
    reconcile(ctx, cluster, prepare_roles=True)


def poll_dependencies(ctx: StepContext) -> Progress:
    observations = reconcile(ctx, _cluster(ctx))
    wanted = [observations[component.name] for component in dependencies.ON_CREATE]
    failed = [seen for seen in wanted if seen.state in dependencies.PROBLEM_STATES]
    if failed:
        raise PhaseFailed(
            "; ".join(f"{seen.component} is {seen.status or seen.state}"
                      + (f": {seen.message}" if seen.message else "") + ("" if seen.managed else
                                                                         " (not installed by InstantStart)")
                      for seen in failed),
            code="dependency_failed",
            detail={"components": [{"component": seen.component, "status": seen.status, "message": seen.message}
                                   for seen in failed]})
    waiting = [seen for seen in wanted if not seen.settled]
    if waiting:
        return Progress.waiting("Waiting for " + ", ".join(f"{seen.component} ({seen.status or seen.state})"
                                                           for seen in waiting))
    idle = [seen.component for seen in wanted if seen.state != DependencyState.ACTIVE]
    return Progress.finished(f"{len(wanted) - len(idle)} of {len(wanted)} components active"
                             + (f"; {', '.join(idle)} waiting for a node" if idle else ""))


def submit_removal(ctx: StepContext) -> None:
    cluster = _cluster(ctx)
    ClusterDependency.objects.filter(cluster=cluster, managed=True).update(desired_state=DependencyState.ABSENT)
    remaining = dependencies.remove(cluster)
    if remaining:
        ctx.log(f"Removing {', '.join(remaining)}.")


def poll_removal(ctx: StepContext) -> Progress:
    cluster = _cluster(ctx)
    remaining = dependencies.remove(cluster)
    if remaining:
        return Progress.waiting("Removing " + ", ".join(remaining))
    deleted = dependencies.remove_roles(cluster)
    if deleted:
        ctx.log(f"Deleted the IAM roles {', '.join(deleted)}.")
    left = leftovers.remove(cluster)
    if left:
        ctx.log(f"Deleted what the managed features made: {', '.join(left)}.")
    ClusterDependency.objects.filter(cluster=cluster, managed=True).update(
        desired_state=DependencyState.ABSENT, observed_state=DependencyState.ABSENT, last_error="")
    return Progress.finished("removed")


CREATE = Phase(slug="dependencies", title="Dependencies", submit=submit_dependencies, poll=poll_dependencies,
               timeout=timedelta(minutes=30), poll_interval=10)
DELETE = Phase(slug="dependencies", title="Dependencies", submit=submit_removal, poll=poll_removal,
               timeout=timedelta(minutes=30), poll_interval=10)
