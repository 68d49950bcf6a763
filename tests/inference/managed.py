"""A cluster the HyperPod inference operator runs on, made in the sandbox: its add-on installed after cert-manager and
the pod identity agent (so the inference CRDs are served), for tests of managed endpoints."""

from __future__ import annotations

from cloud import aws
from clusters import storage
from clusters.features.catalog import CERT_MANAGER, FEATURES, INFERENCE_OPERATOR, POD_IDENTITY_AGENT
from clusters.models import Cluster
from tests.clusters.sandbox import instant_clock
from tests.training.sandbox import _await

INFERENCE_ADDONS = (POD_IDENTITY_AGENT, CERT_MANAGER, FEATURES[INFERENCE_OPERATOR].addon)


def install_inference_operator(eks_name: str, region: str) -> None:
    """The inference operator add-on and its prerequisites on EKS cluster ``eks_name``, ACTIVE (so
    InferenceEndpointConfig and JumpStartModel are served); a prerequisite already there (a training cluster's) is
    kept."""
    eks = aws.client("eks", region=region)
    present = set(eks.list_addons(clusterName=eks_name)["addons"])
    with instant_clock():
        for addon in (addon for addon in INFERENCE_ADDONS if addon not in present):
            eks.create_addon(clusterName=eks_name, addonName=addon)
            _await(lambda addon=addon: eks.describe_addon(clusterName=eks_name, addonName=addon)
                   ["addon"]["status"] == "ACTIVE", f"add-on {addon} ACTIVE")


def operator_cluster(team) -> Cluster:
    """An active cluster of ``team`` on an EKS cluster (no HyperPod: cheaper) running the inference operator, with
    an instance group ``workers`` of ``ml.g5.8xlarge`` rows and the team's namespace (which a cluster's storage
    setup makes) — what a managed endpoint's checks need."""
    from tests import factories
    from tests.inference.serving import _eks_cluster_with_a_node

    cluster = _eks_cluster_with_a_node(team)
    factories.instance_group(cluster, instance_type="ml.g5.8xlarge")
    install_inference_operator(cluster.eks_name, cluster.region)
    storage.ensure_namespace(storage.core_api(cluster), cluster)
    return cluster
