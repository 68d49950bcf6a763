"""What runs on a cluster, or is pinned to one of its instance groups, asked before either is deleted.

The apps that place work on clusters (training jobs, inference endpoints) register a function naming what of theirs
still runs on a given cluster; :func:`workloads_on` asks them all. Keeping the question here lets ``clusters`` refuse
a delete without importing the apps that build on it.
"""

from __future__ import annotations

from collections.abc import Callable

from clusters.models import Cluster

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
