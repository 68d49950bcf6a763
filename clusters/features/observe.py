"""Read every feature's actual state from AWS and Kubernetes and record it in ``ClusterFeature`` rows.

A feature that cannot be read (the Kubernetes API unreachable, a throttled call) is ``unknown`` with the reason in
``last_error``; its other fields keep what was last recorded. A row being changed by a running operation keeps its
``enabling``/``disabling`` state until that operation's phase records the outcome.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from cloud import kube
from clusters.features import (
    autoscaling,
    checkpointing,
    inference,
    load_balancer,
    observability,
    prerequisites,
    task_governance,
    training,
)
from clusters.features.base import FeatureObservation
from clusters.features.catalog import (
    AUTOSCALING,
    FEATURES,
    INFERENCE_OPERATOR,
    LOAD_BALANCER_CONTROLLER,
    OBSERVABILITY,
    ORDER,
    TASK_GOVERNANCE,
    TIERED_CHECKPOINTING,
    TRAINING_OPERATOR,
)
from clusters.models import Cluster, ClusterFeature, FeatureState
from config.errors import ApplicationError

OBSERVERS = {
    TRAINING_OPERATOR: training.FEATURE.observe,
    INFERENCE_OPERATOR: inference.FEATURE.observe,
    OBSERVABILITY: observability.observe,
    TIERED_CHECKPOINTING: checkpointing.observe,
    AUTOSCALING: autoscaling.observe,
    LOAD_BALANCER_CONTROLLER: load_balancer.observe,
    TASK_GOVERNANCE: task_governance.observe,
}


def observe_one(cluster: Cluster, slug: str) -> FeatureObservation:
    try:
        return OBSERVERS[slug](cluster)
    except (ApiException, HTTPError, OSError) as error:
        return FeatureObservation(slug, FeatureState.UNKNOWN, message=kube.translate(error).message)
    except ApplicationError as error:
        return FeatureObservation(slug, FeatureState.UNKNOWN, message=error.message)


def observe(cluster: Cluster, slugs: Iterable[str] = ORDER) -> dict[str, FeatureObservation]:
    """Each feature's actual state (changing nothing)."""
    return {slug: observe_one(cluster, slug) for slug in slugs}


#: The detail of a feature's row naming the feature that enabled it (``Feature.brings``), kept across observations.
BROUGHT_BY = "brought_by"


def record(cluster: Cluster, observations: Iterable[FeatureObservation], *, keep_transitions: bool = True,
           ) -> list[ClusterFeature]:
    """Write ``observations`` into the cluster's ClusterFeature rows (created as needed) and return them."""
    now = timezone.now()
    rows = []
    existing = {row.feature: row for row in ClusterFeature.objects.filter(cluster=cluster)}
    for seen in observations:
        row = existing.get(seen.feature) or ClusterFeature(cluster=cluster, feature=seen.feature)
        transitioning = keep_transitions and row.state in (FeatureState.ENABLING, FeatureState.DISABLING)
        if seen.state == FeatureState.UNKNOWN:
            row.state, row.last_error = (row.state if transitioning else FeatureState.UNKNOWN), seen.message
        else:
            if not transitioning:
                row.state = seen.state
            row.last_error = seen.message if seen.state == FeatureState.FAILED else ""
            row.details = {**{key: value for key, value in (row.details or {}).items()
                              if key in ("installed_prerequisites", BROUGHT_BY)},
                           **seen.details, "settings": seen.settings, "managed": seen.managed}
        row.observed_at = now
        row.save()
        rows.append(row)
    return rows


def prerequisite_states(cluster: Cluster) -> dict[str, str]:
    """Each prerequisite component's state (``active``, ``absent``…), read from EKS."""
    names = prerequisites.needed(FEATURES)
    try:
        return {name: seen.state for name, seen in prerequisites.observe(cluster, names).items()}
    except ApplicationError:
        return {name: "unknown" for name in names}
