"""NCCL and EFA problems of a distributed training job, found read-only.

What is read: the job's stored log lines (``TrainingLogLine``, what the log follower copied from every rank's pod)
scanned for NCCL and libfabric errors (:data:`PATTERNS`); the job's pods in Kubernetes while it runs — once it has
ended, its recorded ranks and submitted manifest — for the ``vpc.amazonaws.com/efa`` each rank requests and the
``NCCL_*`` and ``FI_*`` environment; the Nodes the ranks ran on for the EFA interfaces they advertise (``allocatable``)
against what the instance type has, and for their zone and instance group; and per rank the last step it logged,
so a rank whose progress lags the others by :data:`STEP_LAG` steps (or :data:`SECONDS_LAG` seconds) is a straggler,
like the ranks the job already flagged slow. The suspects — nodes of ranks with errors, lagging ranks and nodes
short of EFA — are what the suggestions name: investigate (their logs, ``diagnose_cluster_nodes``) → retry
(resubmit once fixed) → reboot → replace. Nothing is changed.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, Q
from kubernetes import client as k8s

from cloud import kube
from clusters import nodes
from clusters.diagnostics.nodes import expected_devices
from clusters.diagnostics.report import (
    ERROR,
    INFO,
    INVESTIGATE,
    REBOOT,
    REPLACE,
    RETRY,
    WARNING,
    Diagnosis,
)
from config.errors import NotFound
from training.lifecycle import objects
from training.models import TrainingJob, TrainingLogLine

#: (finding code, severity, what the lines say, pattern), checked in order: a line counts for the first it matches.
PATTERNS: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (
    ("nccl_timeout", ERROR, "An NCCL collective timed out",
     re.compile(r"collective operation timeout|Watchdog caught|NCCL.{0,80}time[d ]?\s?out|Timeout\(ms\)=", re.I)),
    ("libfabric_error", ERROR, "libfabric / the EFA provider reported errors",
     re.compile(r"\bfi_[a-z_]+\b.{0,80}(fail|error)|NET/OFI.{0,120}(error|fail)|libfabric.{0,80}(error|fail)", re.I)),
    ("nccl_error", ERROR, "NCCL failed",
     re.compile(r"unhandled (system|cuda) error|remote process exited|NCCL error|ncclSystemError|"
                r"ncclInternalError|ncclRemoteError", re.I)),
    ("nccl_warning", WARNING, "NCCL warned", re.compile(r"NCCL WARN")),
)
#: A cheap pre-filter the database applies before the patterns run.
_CANDIDATES = ("nccl", "fi_", "ofi", "libfabric", "timeout", "unhandled", "remote process")
MAX_SCANNED = 5000
EVIDENCE_LIMIT = 4
STEP_LAG = 2
SECONDS_LAG = 120.0
_STEP = re.compile(r"\bstep[=: ]\s*(\d+)", re.I)
ENV_PREFIXES = ("NCCL_", "FI_")


@dataclass
class Rank:
    rank: int
    pod: str
    node: str = ""
    efa_requested: int = 0
    env: dict[str, str] = field(default_factory=dict)
    last_step: int | None = None
    last_at: Any = None
    lines: int = 0


def _container_facts(containers: Iterable[dict[str, Any]]) -> tuple[int, dict[str, str]]:
    efa, env = 0, {}
    for container in containers:
        resources = container.get("resources") or {}
        efa += max(nodes.count_of(resources.get("limits") or {}, nodes.EFA),
                   nodes.count_of(resources.get("requests") or {}, nodes.EFA))
        for item in container.get("env") or []:
            if str(item.get("name", "")).startswith(ENV_PREFIXES):
                env[item["name"]] = str(item["value"]) if "value" in item else "(from a reference)"
    return efa, env


def _manifest_containers(manifest: Any) -> list[dict[str, Any]]:
    """The worker containers of the submitted manifest (the first pod template found)."""
    if isinstance(manifest, dict):
        if isinstance(manifest.get("containers"), list):
            return manifest["containers"]
        for value in manifest.values():
            found = _manifest_containers(value)
            if found:
                return found
    elif isinstance(manifest, list):
        for value in manifest:
            found = _manifest_containers(value)
            if found:
                return found
    return []


def _ranks(job: TrainingJob, core: Callable[[], k8s.CoreV1Api]) -> tuple[list[Rank], bool]:
    """The job's ranks with their node, EFA request and environment: from the live pods while the job runs
    (``True``; a HyperPodPyTorchJob's), else from the recorded ranks and the submitted manifest (a finished job's
    pods may be gone)."""
    pods = []
    if not job.terminal and job.object_uid and job.object_kind != "RayJob":
        with kube.translated("ListNamespacedPod"):
            pods = objects.pods(job)
    if pods:
        serialize = core().api_client.sanitize_for_serialization
        ranks = []
        for index, pod in enumerate(pods):
            body = serialize(pod)
            efa, env = _container_facts((body.get("spec") or {}).get("containers") or [])
            labels = (body.get("metadata") or {}).get("labels") or {}
            ranks.append(Rank(rank=int(labels.get(objects.RANK_LABEL, index) or index), pod=body["metadata"]["name"],
                              node=(body.get("spec") or {}).get("nodeName") or "", efa_requested=efa, env=env))
        return ranks, True
    efa, env = _container_facts(_manifest_containers(job.manifest))
    return [Rank(rank=entry["rank"], pod=entry.get("pod", ""), node=entry.get("node") or "", efa_requested=efa,
                 env=dict(env)) for entry in job.ranks], False


def _progress(job: TrainingJob, ranks: list[Rank]) -> None:
    """Each rank's newest line time, line count and last logged step."""
    newest = {row["rank"]: row for row in TrainingLogLine.objects.filter(job=job).values("rank")
              .annotate(last=Max("at"), lines=Count("id"))}
    for rank in ranks:
        row = newest.get(rank.rank)
        if row:
            rank.last_at, rank.lines = row["last"], row["lines"]
        line = (TrainingLogLine.objects.filter(job=job, rank=rank.rank, text__icontains="step")
                .order_by("-seq").values_list("text", flat=True)[:20])
        steps = [int(match.group(1)) for text in line for match in [_STEP.search(text)] if match]
        rank.last_step = max(steps) if steps else None


def _scan(diagnosis: Diagnosis, job: TrainingJob) -> dict[int, set[str]]:
    """Findings for the NCCL/libfabric lines; the codes found per rank."""
    query = Q()
    for word in _CANDIDATES:
        query |= Q(text__icontains=word)
    hits: dict[str, list[TrainingLogLine]] = {}
    by_rank: dict[int, set[str]] = {}
    for line in TrainingLogLine.objects.filter(job=job).filter(query).order_by("seq")[:MAX_SCANNED]:
        for code, _, _, pattern in PATTERNS:
            if pattern.search(line.text):
                hits.setdefault(code, []).append(line)
                by_rank.setdefault(line.rank, set()).add(code)
                break
    for code, severity, words, _ in PATTERNS:
        found = hits.get(code)
        if found:
            ranks = sorted({line.rank for line in found})
            diagnosis.find(code, severity, f"{words} on rank{'s' if len(ranks) > 1 else ''} "
                           f"{', '.join(map(str, ranks))} ({len(found)} line{'s' if len(found) > 1 else ''}).",
                           [f"rank {line.rank} ({line.pod}) seq {line.seq}: {line.text}"
                            for line in found[:EVIDENCE_LIMIT]],
                           subject=",".join(sorted({line.pod for line in found})))
    return by_rank


def _stragglers(diagnosis: Diagnosis, job: TrainingJob, ranks: list[Rank]) -> set[int]:
    """Ranks whose last progress lags the others, and the ranks the job already flagged slow."""
    lagging: set[int] = set()
    steps = [rank.last_step for rank in ranks if rank.last_step is not None]
    times = [rank.last_at for rank in ranks if rank.last_at is not None]
    if len(ranks) >= 2 and steps:
        front, newest = max(steps), max(times) if times else None
        for rank in ranks:
            behind = front - (rank.last_step if rank.last_step is not None else 0)
            late = (newest - rank.last_at).total_seconds() if newest and rank.last_at else 0.0
            if behind >= STEP_LAG or late >= SECONDS_LAG:
                lagging.add(rank.rank)
                diagnosis.find("straggler", WARNING, f"Rank {rank.rank} lags: its last step is "
                               f"{rank.last_step if rank.last_step is not None else 'none'}, the others reached "
                               f"{front}.", [f"rank {rank.rank} ({rank.pod}) last logged step "
                                             f"{rank.last_step}, {late:.0f} s before the newest line",
                                             f"node {rank.node or 'unknown'}"], subject=rank.pod)
    for entry in job.ranks:
        if entry.get("straggler") and entry["rank"] not in lagging:
            lagging.add(entry["rank"])
            diagnosis.find("slow_rank", WARNING, f"Rank {entry['rank']} reported low throughput.",
                           [f"throughput {entry.get('throughput')}", f"node {entry.get('node') or 'unknown'}"],
                           subject=entry.get("pod", ""))
    return lagging


def _read_nodes(core: Callable[[], k8s.CoreV1Api], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The Nodes the ranks ran on (those still there), as JSON."""
    found = {}
    for name in sorted(set(names) - {""}):
        with contextlib.suppress(NotFound), kube.translated("ReadNode"):  # a node gone since the job ran
            api = core()
            found[name] = api.api_client.sanitize_for_serialization(api.read_node(name))
    return found


def _devices_and_placement(diagnosis: Diagnosis, job: TrainingJob, ranks: list[Rank],
                           found: dict[str, dict[str, Any]]) -> set[str]:
    """EFA requested vs advertised, and where the ranks ran; the node names short of EFA."""
    short: set[str] = set()
    zones: dict[str, set[str]] = {}
    groups: dict[str, set[str]] = {}
    placement = []
    for name, node in found.items():
        labels = (node.get("metadata") or {}).get("labels") or {}
        status = node.get("status") or {}
        instance_type = labels.get(nodes.INSTANCE_TYPE_LABEL, "")
        expected = expected_devices(job.cluster.region, instance_type)[1]
        has, usable = nodes.count_of(status.get("capacity") or {}, nodes.EFA), \
            nodes.count_of(status.get("allocatable") or {}, nodes.EFA)
        requested = max((rank.efa_requested for rank in ranks if rank.node == name), default=0)
        zones.setdefault(labels.get(nodes.ZONE_LABEL, "unknown"), set()).add(name)
        groups.setdefault(labels.get(nodes.GROUP_LABEL, instance_type or "unknown"), set()).add(name)
        placement.append({"node": name, "instance_type": instance_type, "zone": labels.get(nodes.ZONE_LABEL, ""),
                          "instance_group": labels.get(nodes.GROUP_LABEL, ""), "efa_expected": expected,
                          "efa_capacity": has, "efa_allocatable": usable, "efa_requested": requested})
        if usable < max(requested, has, expected):
            short.add(name)
            diagnosis.find("efa_missing", ERROR, f"{name} advertises {usable} EFA interface(s); its ranks request "
                           f"{requested} and the instance type has {expected}.",
                           [f"allocatable {nodes.EFA}={usable}", f"capacity {nodes.EFA}={has}",
                            f"{instance_type} has {expected}", f"requested per pod {requested}"], subject=name)
    diagnosis.facts["placement"] = placement
    if len(zones) > 1:
        diagnosis.find("cross_zone_placement", ERROR, "The ranks run in more than one availability zone: EFA does "
                       "not cross zones and NCCL falls back to slower paths.",
                       [f"{zone}: {', '.join(sorted(names))}" for zone, names in sorted(zones.items())])
    if len(groups) > 1:
        diagnosis.find("mixed_placement", WARNING, "The ranks run in more than one instance group.",
                       [f"{group}: {', '.join(sorted(names))}" for group, names in sorted(groups.items())])
    efa_types = [p for p in placement if p["efa_expected"]]
    if efa_types and len(ranks) > 1 and not any(rank.efa_requested for rank in ranks):
        diagnosis.find("efa_not_requested", WARNING, "The nodes have EFA but the ranks request none: NCCL uses TCP "
                       "sockets between nodes.", [f"{p['node']} ({p['instance_type']}) has {p['efa_expected']}"
                                                  for p in efa_types[:EVIDENCE_LIMIT]])
    return short


def _environment(diagnosis: Diagnosis, ranks: list[Rank]) -> None:
    env: dict[str, str] = {}
    for rank in ranks:
        env.update(rank.env)
    diagnosis.facts["environment"] = env
    provider = env.get("FI_PROVIDER")
    if provider and provider != "efa" and any(rank.efa_requested for rank in ranks):
        diagnosis.find("fi_provider_not_efa", ERROR, f"FI_PROVIDER is {provider}: libfabric does not use EFA.",
                       [f"FI_PROVIDER={provider}"])
    if "NCCL_DEBUG" not in env:
        diagnosis.find("nccl_debug_off", INFO, "NCCL_DEBUG is not set: NCCL logs only warnings. Resubmitting with "
                       "NCCL_DEBUG=INFO shows the transport NCCL chose (look for NET/OFI Selected Provider is efa).")


def diagnose(job: TrainingJob) -> Diagnosis:
    """The NCCL/EFA diagnosis of ``job`` (see the module docstring)."""
    cluster = job.cluster
    diagnosis = Diagnosis(subject={"job_id": job.pk, "job": job.name, "state": job.state, "cluster_id": cluster.pk})
    def core() -> k8s.CoreV1Api:  # reached only when something is read from Kubernetes
        return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))

    ranks, live = _ranks(job, core)
    _progress(job, ranks)
    errors = _scan(diagnosis, job)
    lagging = _stragglers(diagnosis, job, ranks)
    found = _read_nodes(core, [rank.node for rank in ranks])
    short = _devices_and_placement(diagnosis, job, ranks, found)
    _environment(diagnosis, ranks)
    diagnosis.facts["ranks"] = [{"rank": r.rank, "pod": r.pod, "node": r.node, "efa_requested": r.efa_requested,
                                 "last_step": r.last_step, "last_line_at": r.last_at.isoformat() if r.last_at else None,
                                 "lines": r.lines} for r in sorted(ranks, key=lambda r: r.rank)]
    diagnosis.facts["pods_live"] = live
    suspects = sorted({rank.node for rank in ranks if rank.rank in lagging or rank.rank in errors} | short)
    _suggest(diagnosis, job, ranks, errors, lagging, suspects)
    return diagnosis


def _suggest(diagnosis: Diagnosis, job: TrainingJob, ranks: list[Rank], errors: dict[int, set[str]],
             lagging: set[int], suspects: list[str]) -> None:
    for rank in sorted(set(errors) | lagging)[:EVIDENCE_LIMIT]:
        diagnosis.suggest(INVESTIGATE, "get_training_job_logs", {"job_id": job.pk, "rank": rank, "tail": 200},
                          f"Read rank {rank}'s last lines around the failure.")
    instance_ids = [i for i in (nodes.instance_id_of({"metadata": {"name": name}}) for name in suspects) if i]
    if not instance_ids:
        return
    base = {"cluster_id": job.cluster_id}
    diagnosis.suggest(INVESTIGATE, "diagnose_cluster_nodes", {**base, "node_ids": instance_ids},
                      "Check the health of the nodes the suspect ranks ran on.")
    if job.terminal:
        diagnosis.suggest(RETRY, "resubmit_training_job", {"job_id": job.pk},
                          "Once the nodes are fixed (or if the fault was transient): run the job again.")
    diagnosis.suggest(REBOOT, "reboot_cluster_nodes", {**base, "node_ids": instance_ids},
                      "Reboot the suspect nodes (resets the EFA devices and the GPU driver); their pods are "
                      "disrupted.")
    diagnosis.suggest(REPLACE, "replace_cluster_nodes", {**base, "node_ids": instance_ids, "confirm_data_loss": True},
                      "Only if the same nodes fail again after the reboot: new instances; data on their instance "
                      "store and root volume is lost — ask the user.")
