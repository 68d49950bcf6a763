"""The nodes of a cluster: HyperPod's view of each instance merged with its Kubernetes Node and the pods
running there.

One listing costs a fixed number of calls whatever the page: ``ListClusterNodes`` page by page (100 nodes a call,
with logical ids), one Node list and one pod list of the EKS cluster (non-terminal pods only, grouped by
``spec.nodeName`` here), and ``DescribeClusterNode`` only for the nodes of the page that have no Kubernetes Node
yet (their zone is not on any label). Nothing is read from or written to the database here.

A HyperPod node and its Kubernetes Node are matched by instance id: HyperPod names the Node ``hyperpod-<instance
id>`` and ends its ``spec.providerID`` with it. Rows are ordered by instance group, then instance id; the cursor is
the last key of a page, so paging stays stable while nodes come and go.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

import botocore.session
from botocore.exceptions import BotoCoreError, ClientError
from kubernetes import client as k8s

from cloud import aws, kube
from clusters.models import Cluster
from config.errors import NotFound, ValidationFailed

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neurondevice"
EFA = "vpc.amazonaws.com/efa"
SCHEDULABLE = "Schedulable"
RUNNING = "Running"
DEEP_HEALTH_CHECK_IN_PROGRESS = "DeepHealthCheckInProgress"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
#: ``ListClusterNodes`` answers at most this many nodes a call.
LIST_BATCH = 100
#: Kubernetes list calls ask for this many objects a page.
KUBE_LIST_LIMIT = 500
_ACTIVE_POD_PHASES = "status.phase!=Succeeded,status.phase!=Failed"
_INSTANCE_ID = re.compile(r"(?:^|[/-])(i-[0-9a-f]{8}(?:[0-9a-f]{9})?)$")


@cache
def node_statuses() -> tuple[str, ...]:
    """HyperPod's ``ClusterInstanceStatus`` values, from botocore's own model."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("ClusterInstanceStatus").enum)


@dataclass
class Pod:
    namespace: str
    name: str


@dataclass
class NodeRow:
    """One node: HyperPod's facts, its Kubernetes Node's (``None`` while it has none) and its pods."""

    instance_id: str
    logical_id: str | None
    instance_group: str
    instance_type: str
    status: str
    status_message: str
    launch_time: datetime | None
    zone: str = ""
    private_dns: str = ""
    node_name: str | None = None
    ready: bool | None = None
    schedulable: bool | None = None
    health_status: str | None = None
    deep_health_check: str | None = None
    gpu_count: int = 0
    efa_count: int = 0
    pods: list[Pod] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return (self.instance_group, self.instance_id)

    @property
    def pod_count(self) -> int:
        return len(self.pods)

    @property
    def healthy(self) -> bool:
        """Running in HyperPod, and Ready and schedulable in Kubernetes with HyperPod's ``Schedulable`` label."""
        return (self.status == RUNNING and bool(self.ready) and bool(self.schedulable)
                and self.health_status in (None, SCHEDULABLE))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "pod_count": self.pod_count, "healthy": self.healthy}


@dataclass
class NodePage:
    rows: list[NodeRow]
    next_cursor: str | None
    previous_cursor: str | None


# Reading the two sources -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _translated(service: str, operation: str) -> Iterator[None]:
    """AWS and Kubernetes failures as vocabulary errors (the engine does this for steps; views need it too)."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        raise aws.translate(error, service=service, operation=operation) from error
    except k8s.ApiException as error:
        raise kube.translate(error, operation=operation) from error


def hyperpod_nodes(sagemaker, hyperpod_name: str) -> list[dict[str, Any]]:
    """Every ``ClusterNodeSummary`` of the HyperPod cluster, following ``NextToken``, with logical ids."""
    summaries: list[dict[str, Any]] = []
    token: str | None = None
    with _translated("sagemaker", "ListClusterNodes"):
        while True:
            page = sagemaker.list_cluster_nodes(ClusterName=hyperpod_name, MaxResults=LIST_BATCH,
                                                IncludeNodeLogicalIds=True, **({"NextToken": token} if token else {}))
            summaries += page.get("ClusterNodeSummaries", [])
            token = page.get("NextToken")
            if not token:
                return summaries


def kube_list(call, **kwargs) -> list[dict[str, Any]]:
    """Every item of a Kubernetes list call as plain JSON, following ``continue`` (models are not built: a big
    cluster has thousands of pods)."""
    items: list[dict[str, Any]] = []
    token = None
    while True:
        response = call(limit=KUBE_LIST_LIMIT, _preload_content=False, **({"_continue": token} if token else {}),
                        **kwargs)
        body = json.loads(response.data)
        items += body.get("items") or []
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return items


def core_api(cluster: Cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=cluster.region))


def kube_nodes(core: k8s.CoreV1Api) -> dict[str, dict[str, Any]]:
    """The cluster's Nodes by the instance id they run on (Nodes that are not EC2/HyperPod instances are left out)."""
    with _translated("kubernetes", "ListNode"):
        nodes = kube_list(core.list_node)
    by_instance: dict[str, dict[str, Any]] = {}
    for node in nodes:
        instance_id = instance_id_of(node)
        if instance_id:
            by_instance[instance_id] = node
    return by_instance


def pods_by_node(core: k8s.CoreV1Api) -> dict[str, list[Pod]]:
    """Non-terminal pods of every namespace grouped by the Node they are bound to — one list call (paged)."""
    with _translated("kubernetes", "ListPodForAllNamespaces"):
        pods = kube_list(core.list_pod_for_all_namespaces, field_selector=_ACTIVE_POD_PHASES)
    grouped: dict[str, list[Pod]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            metadata = pod.get("metadata") or {}
            grouped.setdefault(node_name, []).append(Pod(namespace=metadata.get("namespace", ""),
                                                         name=metadata.get("name", "")))
    for pods_here in grouped.values():
        pods_here.sort(key=lambda pod: (pod.namespace, pod.name))
    return grouped


def instance_id_of(node: dict[str, Any]) -> str | None:
    """The EC2 instance id of a Node: the end of its ``providerID`` (``aws:///<zone id>/sagemaker/cluster/hyperpod-
    <cluster id>-<instance id>`` for HyperPod, ``aws:///<zone>/<instance id>`` for EC2) or of its name."""
    for text in ((node.get("spec") or {}).get("providerID") or "", (node.get("metadata") or {}).get("name") or ""):
        found = _INSTANCE_ID.search(text)
        if found:
            return found.group(1)
    return None


# Merging -----------------------------------------------------------------------------------------------------------


def _condition(node: dict[str, Any], kind: str) -> str | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition.get("status")
    return None


def count_of(resources: dict[str, Any], *keys: str) -> int:
    total = 0
    for key in keys:
        with contextlib.suppress(TypeError, ValueError):
            total += int(resources.get(key) or 0)
    return total


def _deep_health(status: str, labels: dict[str, str]) -> str | None:
    """Deep health checks: ``InProgress`` while HyperPod says so, else what the node's label reports (if any)."""
    if status == DEEP_HEALTH_CHECK_IN_PROGRESS:
        return "InProgress"
    return labels.get(DEEP_HEALTH_LABEL)


def merge(summaries: Iterable[dict[str, Any]], nodes: dict[str, dict[str, Any]],
          pods: dict[str, list[Pod]]) -> list[NodeRow]:
    """One row per HyperPod node, with its Kubernetes Node's facts and pods; ordered by group, then instance id."""
    rows = []
    for summary in summaries:
        instance_id = summary["InstanceId"]
        status = summary.get("InstanceStatus") or {}
        row = NodeRow(
            instance_id=instance_id, logical_id=summary.get("NodeLogicalId"),
            instance_group=summary.get("InstanceGroupName", ""), instance_type=summary.get("InstanceType", ""),
            status=status.get("Status", ""), status_message=status.get("Message") or "",
            launch_time=summary.get("LaunchTime"), private_dns=summary.get("PrivateDnsHostname") or "")
        node = nodes.get(instance_id)
        if node is not None:
            labels = (node.get("metadata") or {}).get("labels") or {}
            capacity = (node.get("status") or {}).get("capacity") or {}
            row.node_name = node["metadata"]["name"]
            row.zone = labels.get(ZONE_LABEL, "")
            row.ready = _condition(node, "Ready") == "True"
            row.schedulable = not (node.get("spec") or {}).get("unschedulable", False)
            row.health_status = labels.get(HEALTH_LABEL)
            row.gpu_count = count_of(capacity, GPU, NEURON)
            row.efa_count = count_of(capacity, EFA)
            row.pods = pods.get(row.node_name, [])
            row.deep_health_check = _deep_health(row.status, labels)
        else:
            row.deep_health_check = _deep_health(row.status, {})
        rows.append(row)
    rows.sort(key=lambda row: row.key)
    return rows


def _fill_zones(sagemaker, hyperpod_name: str, rows: list[NodeRow]) -> None:
    """The zone of page rows without a Kubernetes Node, from ``DescribeClusterNode`` (one call each)."""
    for row in rows:
        if row.zone or row.node_name:
            continue
        with contextlib.suppress(NotFound), _translated("sagemaker", "DescribeClusterNode"):
            details = sagemaker.describe_cluster_node(ClusterName=hyperpod_name, NodeId=row.instance_id)
            row.zone = ((details.get("NodeDetails") or {}).get("Placement") or {}).get("AvailabilityZone", "")


def cluster_rows(cluster: Cluster) -> list[NodeRow]:
    """Every node of ``cluster``, merged (no zone look-ups); empty for a cluster without a HyperPod cluster."""
    if not cluster.hyperpod_name:
        return []
    summaries = hyperpod_nodes(aws.client("sagemaker", region=cluster.region), cluster.hyperpod_name)
    if not summaries:
        return []
    core = core_api(cluster)
    return merge(summaries, kube_nodes(core), pods_by_node(core))


# Paging ------------------------------------------------------------------------------------------------------------


def encode_cursor(key: tuple[str, str], *, backwards: bool = False) -> str:
    payload = json.dumps({"k": list(key), "b": backwards}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[tuple[str, str], bool]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        group, instance_id = payload["k"]
        if not isinstance(group, str) or not isinstance(instance_id, str):
            raise TypeError
        return (group, instance_id), bool(payload.get("b"))
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ValidationFailed.for_field("cursor", "invalid_cursor",
                                         "This cursor is not one a previous page gave.") from None


def page_of(rows: list[NodeRow], *, cursor: str | None, page_size: int) -> NodePage:
    """The page after (or, for a backwards cursor, before) the cursor's key."""
    if cursor:
        key, backwards = decode_cursor(cursor)
        if backwards:
            before = [row for row in rows if row.key < key]
            shown = before[-page_size:]
            has_previous = len(before) > page_size
            has_next = True
        else:
            after = [row for row in rows if row.key > key]
            shown = after[:page_size]
            has_previous = True
            has_next = len(after) > page_size
    else:
        shown, has_previous, has_next = rows[:page_size], False, len(rows) > page_size
    return NodePage(rows=shown,
                    next_cursor=encode_cursor(shown[-1].key) if has_next and shown else None,
                    previous_cursor=encode_cursor(shown[0].key, backwards=True) if has_previous and shown else None)


def node_page(cluster: Cluster, *, instance_group: str = "", statuses: Iterable[str] = (), cursor: str | None = None,
              page_size: int = DEFAULT_PAGE_SIZE) -> NodePage:
    """One page of ``cluster``'s nodes, filtered by instance group and HyperPod status."""
    wanted = set(statuses)
    rows = [row for row in cluster_rows(cluster)
            if (not instance_group or row.instance_group == instance_group) and (not wanted or row.status in wanted)]
    page = page_of(rows, cursor=cursor, page_size=page_size)
    if page.rows:
        _fill_zones(aws.client("sagemaker", region=cluster.region), cluster.hyperpod_name, page.rows)
    return page
