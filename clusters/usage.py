"""What runs on a cluster, or is pinned to one of its instance groups, asked before either is deleted.

The apps that place work on clusters (training jobs, inference endpoints) declare, in their own ``usage`` module,
``WORKLOAD_SOURCES`` (functions naming what of theirs still runs on a given cluster) and ``GROUP_PIN_SOURCES``
(what is pinned to one of its instance groups); :func:`register_declared` registers them when the apps are ready and
:func:`workloads_on` / :func:`pinned_to` ask them all. Keeping the question here lets ``clusters`` refuse a delete
without importing the apps that build on it.

Apps that may refuse new capacity (a team over its budget: ``spending``) declare ``CAPACITY_CHECKS`` there too:
:func:`check_new_capacity` asks each before a cluster is created, a group added or a group scaled up, and a check
refuses by raising an application error (``budget_exceeded``) that every face shows.

Apps that keep something on a cluster through one of its managed features (compute quotas through
``task_governance``: ``governance``) declare ``FEATURE_DEPENDENTS``: :func:`dependents_on` asks them before the
feature is turned off (``feature_in_use``) or the cluster deleted (``cluster_has_dependents``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accounts.models import Team
from clusters.models import Cluster
from config import discovery

WorkloadSource = Callable[[Cluster], list[str]]

_SOURCES: list[WorkloadSource] = []


def register_workload_source(source: WorkloadSource) -> WorkloadSource:
    """Add ``source`` (cluster → descriptions such as ``"training job llama-sft (running)"``); usable as a
    decorator. Registering the same function twice has no effect."""
    if source not in _SOURCES:
        _SOURCES.append(source)
    return source


def unregister_workload_source(source: WorkloadSource) -> None:
    if source in _SOURCES:
        _SOURCES.remove(source)


def workloads_on(cluster: Cluster) -> list[str]:
    """Everything registered sources report as still running on ``cluster``, in registration order."""
    return [workload for source in _SOURCES for workload in source(cluster)]


GroupPinSource = Callable[[Cluster, str], list[str]]

_PIN_SOURCES: list[GroupPinSource] = []


def register_group_pin_source(source: GroupPinSource) -> GroupPinSource:
    """Add ``source`` ((cluster, instance group name) → descriptions of jobs or endpoints pinned to that group);
    usable as a decorator. Registering the same function twice has no effect."""
    if source not in _PIN_SOURCES:
        _PIN_SOURCES.append(source)
    return source


def unregister_group_pin_source(source: GroupPinSource) -> None:
    if source in _PIN_SOURCES:
        _PIN_SOURCES.remove(source)


def pinned_to(cluster: Cluster, group: str) -> list[str]:
    """Everything registered sources report as pinned to instance group ``group`` of ``cluster``."""
    return [workload for source in _PIN_SOURCES for workload in source(cluster, group)]


@dataclass(frozen=True)
class NewCapacity:
    """Instances a change would add to ``team``'s clusters: ``count`` × ``instance_type`` in ``region``, bought as
    ``capacity_type`` (``clusters.models.CapacityType``); ``what`` names the change for messages."""

    team: Team
    region: str
    instance_type: str
    count: int
    capacity_type: str
    what: str


CapacityCheck = Callable[[NewCapacity], None]

_CAPACITY_CHECKS: list[CapacityCheck] = []


def register_capacity_check(check: CapacityCheck) -> CapacityCheck:
    """Add ``check`` (raises an ``ApplicationError`` to refuse the capacity); registering it twice has no effect."""
    if check not in _CAPACITY_CHECKS:
        _CAPACITY_CHECKS.append(check)
    return check


def check_new_capacity(capacity: NewCapacity) -> None:
    """Ask every registered check about ``capacity``, before anything is written or sent to AWS; the first that
    refuses raises."""
    for check in _CAPACITY_CHECKS:
        check(capacity)


@dataclass(frozen=True)
class Dependent:
    """Something an app keeps on a cluster that works through the managed feature ``feature`` (a slug of
    ``clusters.features.catalog``) and must be removed before that feature is turned off or the cluster deleted;
    ``description`` names it for messages (``"the compute quota of team robotics"``)."""

    feature: str
    description: str


DependentSource = Callable[[Cluster], list[Dependent]]

_DEPENDENT_SOURCES: list[DependentSource] = []


def register_dependent_source(source: DependentSource) -> DependentSource:
    """Add ``source`` (cluster → its :class:`Dependent` objects); registering it twice has no effect."""
    if source not in _DEPENDENT_SOURCES:
        _DEPENDENT_SOURCES.append(source)
    return source


def dependents_on(cluster: Cluster, feature: str | None = None) -> list[str]:
    """The descriptions of what registered sources keep on ``cluster`` (through ``feature`` only, when given)."""
    return [dependent.description for source in _DEPENDENT_SOURCES for dependent in source(cluster)
            if feature is None or dependent.feature == feature]


def register_declared() -> None:
    """Register the ``WORKLOAD_SOURCES``, ``GROUP_PIN_SOURCES``, ``CAPACITY_CHECKS`` and ``FEATURE_DEPENDENTS`` every
    installed app declares in its ``usage`` module."""
    for sources in discovery.declared("usage", "WORKLOAD_SOURCES"):
        for source in sources:
            register_workload_source(source)
    for pin_sources in discovery.declared("usage", "GROUP_PIN_SOURCES"):
        for pin_source in pin_sources:
            register_group_pin_source(pin_source)
    for checks in discovery.declared("usage", "CAPACITY_CHECKS"):
        for check in checks:
            register_capacity_check(check)
    for dependent_sources in discovery.declared("usage", "FEATURE_DEPENDENTS"):
        for dependent_source in dependent_sources:
            register_dependent_source(dependent_source)
