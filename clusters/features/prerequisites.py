"""The cluster dependencies features need, installed before the features that need them (the *prerequisites*
phase of a ``cluster.features`` operation).

Components of ``clusters.dependencies`` are installed through it (with their pod identity roles) and recorded in
``ClusterDependency`` like the create pipeline's; ``metrics-server`` (the inference operator's) is installed the same
way. A component installed here is the cluster's from then on — except ``metrics-server``, which the feature that
installed it removes again when it is turned off and nothing else needs it (``ClusterFeature.details``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from cloud import aws
from clusters import dependencies
from clusters.dependencies import Component, Observation
from clusters.features.catalog import FEATURES, METRICS_SERVER
from clusters.models import Cluster, DependencyKind, DependencyState
from operations.context import StepContext
from operations.pipeline import PhaseFailed, Progress

#: Components a feature may install that are not in the dependency catalog (removed with the feature).
EXTRA = {METRICS_SERVER: Component(METRICS_SERVER, DependencyKind.ADDON, on_create=False)}


def component(name: str) -> Component:
    return dependencies.COMPONENTS.get(name) or EXTRA[name]


def needed(features: Iterable[str]) -> list[str]:
    """The prerequisites of ``features``, each once, requirements first."""
    names: list[str] = []
    for slug in features:
        for name in FEATURES[slug].prerequisites:
            for required in (*component(name).requires, name):
                if required not in names:
                    names.append(required)
    return names


def observe(cluster: Cluster, names: Iterable[str]) -> dict[str, Observation]:
    with aws.translated("eks", "DescribeAddon"):
        found = {}
        for name in names:
            addon = dependencies.describe_addon(cluster, name) if cluster.eks_name else None
            found[name] = (dependencies.addon_observation(cluster, addon) if addon is not None else
                           Observation(component=name, kind=DependencyKind.ADDON, state=DependencyState.ABSENT))
    return found


def reconcile(ctx: StepContext, cluster: Cluster, names: list[str]) -> dict[str, Observation]:
    """Install each absent component whose requirements are ACTIVE; record what the catalog knows."""
    seen = observe(cluster, names)
    for name in names:
        target = component(name)
        ready = all(seen[required].state == DependencyState.ACTIVE for required in target.requires)
        if seen[name].state != DependencyState.ABSENT or not ready:
            continue
        token = ctx.intend(f"prerequisite_token:{name}:{ctx.attempt}", lambda: str(uuid.uuid4()))
        ctx.log(f"Installing the EKS add-on {name} (a prerequisite).")
        seen[name] = dependencies.install_addon(cluster, target, token=token)
        installed = list(ctx.outputs.get("installed_prerequisites", []))
        if name not in installed:
            ctx.output(installed_prerequisites=[*installed, name])
    dependencies.record(cluster, [observation for name, observation in seen.items()
                                  if name in dependencies.COMPONENTS])
    return seen


def _names(ctx: StepContext) -> list[str]:
    return needed(slug for slug, change in ctx.params["changes"].items() if change["enabled"])


def submit(ctx: StepContext) -> None:
    from clusters.phases.common import cluster_of

    reconcile(ctx, cluster_of(ctx), _names(ctx))


def poll(ctx: StepContext) -> Progress:
    from clusters.phases.common import cluster_of

    seen = reconcile(ctx, cluster_of(ctx), _names(ctx))
    failed = [observation for observation in seen.values() if observation.state in dependencies.PROBLEM_STATES]
    if failed:
        raise PhaseFailed("; ".join(f"{item.component} is {item.status or item.state}"
                                    + (f": {item.message}" if item.message else "") for item in failed),
                          code="dependency_failed",
                          detail={"components": [{"component": item.component, "status": item.status,
                                                  "message": item.message} for item in failed]})
    waiting = [item for item in seen.values() if item.state != DependencyState.ACTIVE]
    if waiting:
        return Progress.waiting("Waiting for " + ", ".join(f"{item.component} ({item.status or item.state})"
                                                           for item in waiting))
    return Progress.finished(f"{len(seen)} prerequisites active")
