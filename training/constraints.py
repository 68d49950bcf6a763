"""Submit-time constraints a job must meet on its cluster, checked before anything is sent to it.

Field problems (``{field: FieldProblem}``, collected by ``training.planning``):

- ``instance_group``: ``unknown_instance_group`` (no live group of that name, or the cluster has none),
  ``unknown_instance_type`` (EC2 does not describe the group's type in the region);
- ``gpus_per_node``: ``too_many_gpus``; ``efa_per_node``: ``too_many_efa`` — from EC2's facts of the type
  (``clusters.inspection.catalog``): ``GpuInfo`` (or Neuron devices) and ``EfaInfo.MaximumEfaInterfaces``;
- ``elastic``: ``elastic_spot_group`` (the group runs on spot capacity), ``elastic_tiered_checkpointing``,
  ``elastic_checkpointless``; ``min_replicas``/``max_replicas``: ``invalid_elastic_range``;
- ``checkpoints``: ``tiered_checkpointing_off`` (tiered without the cluster feature enabled).

The operator the path needs is asked of the cluster's API server (is the CRD served?):
:func:`require_operator` raises :class:`OperatorMissing` (409, ``operator_missing``) whose ``detail`` says how to
get it — the ``training_operator`` feature toggle, or the ``kuberay-operator`` dependency.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from cloud import kube
from clusters import kuberay
from clusters.features import checkpointing
from clusters.features.catalog import TRAINING_OPERATOR
from clusters.inspection import catalog
from clusters.models import CapacityType, Cluster, InstanceGroup
from config.errors import Conflict
from training.models import TrainingPath
from training.recipes.fields import FieldProblem

#: The CRD each path needs on the cluster.
CRDS: dict[str, str] = {TrainingPath.HYPERPOD: "hyperpodpytorchjobs.sagemaker.amazonaws.com",
                        TrainingPath.KUBERAY: "rayjobs.ray.io"}


class OperatorMissing(Conflict):
    """The cluster does not serve the job kind of the recipe's path. ``detail`` says what would add it."""

    code = "operator_missing"
    default_message = "The cluster has no operator for this kind of job."

    def __init__(self, message: str, *, detail: dict[str, str]):
        super().__init__(message)
        self.detail = detail

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "detail": self.detail}


def operator_served(cluster: Cluster, path: str) -> bool:
    """Whether the cluster's API server serves the CRD of ``path`` (``read_custom_resource_definition``)."""
    api = k8s.ApiextensionsV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    try:
        api.read_custom_resource_definition(CRDS[path])
    except ApiException as error:
        if error.status == 404:
            return False
        raise kube.translate(error, operation="ReadCustomResourceDefinition") from error
    except (HTTPError, OSError) as error:
        raise kube.translate(error, operation="ReadCustomResourceDefinition") from error
    return True


def require_operator(cluster: Cluster, path: str) -> None:
    """Raise :class:`OperatorMissing` unless the cluster serves the CRD of ``path``."""
    if operator_served(cluster, path):
        return
    if path == TrainingPath.HYPERPOD:
        raise OperatorMissing(
            f"Cluster {cluster.name} has no HyperPod training operator; turn on the training_operator feature.",
            detail={"feature": TRAINING_OPERATOR, "enable": f"PATCH /api/v1/clusters/{cluster.pk}/features "
                                                            '{"training_operator": {"enabled": true}}'})
    raise OperatorMissing(f"Cluster {cluster.name} has no KubeRay operator; install the {kuberay.NAME} dependency.",
                          detail={"dependency": kuberay.NAME})


def instance_facts(region: str, instance_type: str) -> catalog.InstanceTypeOffer | None:
    """EC2's hardware facts of a HyperPod instance type in ``region`` (``None`` when it is not offered there)."""
    return catalog.catalog(region).get(instance_type)


def choose_group(cluster: Cluster, name: str | None) -> tuple[InstanceGroup, catalog.InstanceTypeOffer]:
    """The live instance group ``name`` of ``cluster`` — by default the first (by name) whose type has GPUs, else
    the first — and its type's facts. Raises ``FieldProblem`` for the ``instance_group`` field."""
    groups = list(InstanceGroup.objects.filter(cluster=cluster, deleted=False).order_by("name"))
    if not groups:
        raise FieldProblem("unknown_instance_group", f"Cluster {cluster.name} has no instance groups.")
    if name:
        group = next((group for group in groups if group.name == name), None)
        if group is None:
            raise FieldProblem("unknown_instance_group", f"Cluster {cluster.name} has no instance group {name!r}; "
                                                         f"groups: {', '.join(g.name for g in groups)}.")
        candidates = [group]
    else:
        candidates = groups
    facts = {group.name: instance_facts(cluster.region, group.instance_type) for group in candidates}
    if not name:
        group = next((g for g in candidates if (found := facts[g.name]) and found.accelerator_count), candidates[0])
    assert group is not None  # the named group, or the first accelerated candidate
    offer = facts[group.name]
    if offer is None:
        raise FieldProblem("unknown_instance_type", f"EC2 does not describe {group.instance_type} (group "
                                                    f"{group.name}) in {cluster.region}.")
    return group, offer


def fit_hardware(values: dict[str, Any], offer: catalog.InstanceTypeOffer) -> dict[str, FieldProblem]:
    """Fill ``gpus_per_node``/``efa_per_node`` (default: all of the type's) and check they fit the type."""
    problems: dict[str, FieldProblem] = {}
    gpus, efa = offer.accelerator_count, offer.max_efa_interfaces if offer.efa_supported else 0
    if values.get("gpus_per_node") is None:
        values["gpus_per_node"] = gpus
    elif values["gpus_per_node"] > gpus:
        problems["gpus_per_node"] = FieldProblem(
            "too_many_gpus", f"{offer.name} has {gpus} GPU{'s' if gpus != 1 else ''}; "
                             f"{values['gpus_per_node']} requested per node.")
    if values.get("efa_per_node") is None:
        values["efa_per_node"] = efa
    elif values["efa_per_node"] > efa:
        problems["efa_per_node"] = FieldProblem(
            "too_many_efa", f"{offer.name} has {efa} EFA interface{'s' if efa != 1 else ''}; "
                            f"{values['efa_per_node']} requested per node.")
    return problems


def check_elastic(values: dict[str, Any], group: InstanceGroup | None) -> dict[str, FieldProblem]:
    """Elastic training excludes spot groups, managed tiered checkpointing and checkpointless training, and needs
    ``min_replicas ≤ replicas ≤ max_replicas`` (``max_replicas`` defaults to ``replicas``)."""
    if not values.get("elastic"):
        return {}
    if values.get("max_replicas") is None:
        values["max_replicas"] = values["replicas"]
    reasons = []
    if group is not None and group.capacity_type == CapacityType.SPOT:
        reasons.append(FieldProblem("elastic_spot_group", f"Elastic training cannot run on instance group "
                                                          f"{group.name}: it uses spot capacity."))
    if values.get("checkpoints") == "tiered":
        reasons.append(FieldProblem("elastic_tiered_checkpointing", "Elastic training cannot use managed tiered "
                                                                    "checkpointing; choose nvme checkpoints."))
    if values.get("checkpointless"):
        reasons.append(FieldProblem("elastic_checkpointless", "Elastic training cannot be combined with "
                                                              "checkpointless training."))
    problems = {"elastic": reasons[0]} if reasons else {}
    low, high = values.get("min_replicas") or 1, values["max_replicas"]
    if not low <= values["replicas"] <= high:
        field = "min_replicas" if low > values["replicas"] else "max_replicas"
        problems[field] = FieldProblem("invalid_elastic_range", f"Elastic training needs min_replicas ({low}) ≤ "
                                                                f"replicas ({values['replicas']}) ≤ max_replicas "
                                                                f"({high}).")
    return problems


def checkpoint_service_account(cluster: Cluster, values: dict[str, Any]) -> tuple[str, FieldProblem | None]:
    """The ServiceAccount pods run as: the tiered-checkpointing one when ``checkpoints`` is ``tiered`` (a problem
    when the feature is not enabled on the cluster), else ``default``."""
    if values.get("checkpoints") != "tiered":
        return "default", None
    account = checkpointing.service_account(cluster)
    if account is None:
        return "default", FieldProblem("tiered_checkpointing_off", f"Managed tiered checkpointing is not on for "
                                                                   f"cluster {cluster.name}; turn it on or choose "
                                                                   "nvme checkpoints.")
    return account, None
