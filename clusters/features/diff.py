"""The explicit-diff contract: a request names only the fields the user changed; compared with the actual
state, only what differs becomes work.

``requested`` maps a feature to ``{"enabled"?: bool, "memory_percentage"?: int}``. ``enabled`` left out keeps the
actual value (so ``{"tiered_checkpointing": {"memory_percentage": 30}}`` changes the percentage of an enabled
feature). The answer maps each differing feature to what the operation must make true: ``{"enabled": bool}`` plus,
for tiered checkpointing being enabled, ``memory_percentage``. Checks that need the actual state are field errors
with stable codes, all reported at once.
"""

from __future__ import annotations

from typing import Any

from clusters.features.base import FeatureObservation
from clusters.features.catalog import DEFAULT_MEMORY_PERCENTAGE, FEATURES, ORDER, TIERED_CHECKPOINTING
from clusters.models import Cluster, FeatureState
from config.errors import InvalidFields


def changes(cluster: Cluster, requested: dict[str, dict[str, Any]],
            actual: dict[str, FeatureObservation]) -> dict[str, dict[str, Any]]:
    """What differs between ``requested`` and ``actual``, in operation order; ``ValidationFailed`` when a request
    cannot be met as the cluster is."""
    errors = InvalidFields()
    found: dict[str, dict[str, Any]] = {}
    for slug in ORDER:
        if slug not in requested:
            continue
        asked, seen = requested[slug], actual[slug]
        if seen.state == FeatureState.UNKNOWN:
            errors.add(slug, "feature_state_unknown", f"The state of {FEATURES[slug].title} could not be read: "
                       f"{seen.message}")
            continue
        wanted = asked.get("enabled", seen.enabled)
        percentage = asked.get("memory_percentage")
        if percentage is not None and not wanted:
            errors.add(f"{slug}.memory_percentage", "not_applicable",
                       "The memory percentage applies only while tiered checkpointing is on.")
            continue
        if wanted and seen.state == FeatureState.ENABLED:
            current = seen.settings.get("memory_percentage")
            if slug == TIERED_CHECKPOINTING and percentage is not None and percentage != current:
                found[slug] = {"enabled": True, "memory_percentage": percentage}
            continue
        if not wanted and seen.state == FeatureState.DISABLED:
            continue
        if not seen.managed:
            errors.add(slug, "feature_not_managed", f"{FEATURES[slug].title} was set up outside InstantStart; "
                       "InstantStart does not change it.")
            continue
        if wanted and FEATURES[slug].needs_hyperpod and not cluster.hyperpod_name:
            errors.add(slug, "hyperpod_missing", f"Cluster {cluster.name} has no HyperPod cluster.")
            continue
        change: dict[str, Any] = {"enabled": wanted}
        if wanted and slug == TIERED_CHECKPOINTING:
            change["memory_percentage"] = percentage or seen.settings.get("memory_percentage") \
                or DEFAULT_MEMORY_PERCENTAGE
        found[slug] = change
    errors.raise_if_any("Some features cannot be changed as asked.")
    return found
