"""What runs on a cluster, or is pinned to one of its instance groups, asked before either is deleted.

The apps that place work on clusters (training jobs, inference endpoints) declare, in their own ``usage`` module,
``WORKLOAD_SOURCES`` (functions naming what of theirs still runs on a given cluster) and ``GROUP_PIN_SOURCES``
(what is pinned to one of its instance groups); :func:`register_declared` registers them when the apps are ready and
:func:`workloads_on` / :func:`pinned_to` ask them all. Keeping the question here lets ``clusters`` refuse a delete
without importing the apps that build on it.
"""

from __future__ import annotations

from collections.abc import Callable

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


def register_declared() -> None:
    """Register the ``WORKLOAD_SOURCES`` and ``GROUP_PIN_SOURCES`` every installed app declares in its ``usage``
    module."""
    for sources in discovery.declared("usage", "WORKLOAD_SOURCES"):
        for source in sources:
            register_workload_source(source)
    for pin_sources in discovery.declared("usage", "GROUP_PIN_SOURCES"):
        for pin_source in pin_sources:
            register_group_pin_source(pin_source)
