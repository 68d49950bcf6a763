"""What each team's Kueue ``ClusterQueue`` uses on a governed cluster: its ``status.flavorsUsage`` — per flavor (task
governance makes one ``ResourceFlavor`` per instance type, named by it) the ``total`` of each resource its admitted
workloads hold, what they borrowed from the cohort included. Read from ``kueue.x-k8s.io/v1beta2`` (or ``v1beta1`` from
a Kueue that serves only that) with one list of the cluster's ClusterQueues.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from cloud import kube
from clusters.models import Cluster
from governance import admission

PLURAL = "clusterqueues"

#: flavor (instance type) → resource (``cpu``, ``nvidia.com/gpu``, …) → amount in use.
FlavorsUsage = dict[str, dict[str, Decimal]]


def _cluster_queues(cluster: Cluster) -> list[dict[str, Any]]:
    custom = k8s.CustomObjectsApi(kube.api_client(cluster.eks_name, region=cluster.region))
    with kube.translated("list clusterqueues.kueue.x-k8s.io"):
        for version in admission.VERSIONS:
            try:
                listed = custom.list_cluster_custom_object(admission.GROUP, version, PLURAL)
                return cast(list[dict[str, Any]], cast(dict[str, Any], listed).get("items") or [])
            except ApiException as error:
                if error.status != 404 or version == admission.VERSIONS[-1]:
                    raise
    return []


def flavors_usage(queue: dict[str, Any]) -> FlavorsUsage:
    """A ClusterQueue's ``status.flavorsUsage`` as amounts (resources it reports none of are left out)."""
    found: FlavorsUsage = {}
    for flavor in (queue.get("status") or {}).get("flavorsUsage") or []:
        amounts = {resource["name"]: kube.quantity(resource.get("total", 0))
                   for resource in flavor.get("resources") or [] if resource.get("name")}
        if flavor.get("name"):
            found[flavor["name"]] = amounts
    return found


def usage_by_queue(cluster: Cluster, queue_names: set[str]) -> dict[str, FlavorsUsage]:
    """The usage of the ClusterQueues ``queue_names`` on ``cluster`` (one not there is left out). Raises the
    vocabulary error of a failed read (``kube_unreachable``; ``NotFound`` without Kueue's CRD)."""
    return {queue["metadata"]["name"]: flavors_usage(queue) for queue in _cluster_queues(cluster)
            if (queue.get("metadata") or {}).get("name") in queue_names}
