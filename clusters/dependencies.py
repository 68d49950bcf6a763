"""The components a cluster needs, how to see what a cluster has, and how to install or remove what we own.

The catalog (:data:`CATALOG`, in install order; a component is installed once everything it ``requires`` is
active):

================================  ========  ==================  =================================================
component                         kind      requires            identity (EKS Pod Identity, role ``iam_name``)
================================  ========  ==================  =================================================
eks-pod-identity-agent            add-on    —                   —
cert-manager                      add-on    —                   —
aws-mountpoint-s3-csi-driver      add-on    pod identity agent  ``s3-csi-driver-sa``: list, read and write the
                                                                team's prefix of the shared bucket, nothing else
aws-fsx-csi-driver                add-on    pod identity agent  ``fsx-csi-controller-sa``: describe FSx and the
                                                                network; create, change and delete only file
                                                                systems tagged with the cluster's id
amazon-cloudwatch-observability   add-on    pod identity agent  ``cloudwatch-agent``: CloudWatchAgentServerPolicy
kuberay-operator                  manifest  —                   — (``clusters.kuberay``, pinned)
deep-health-check                 manifest  —                   — (``clusters.hyperpod_chart``: HyperPod's chart,
health-monitoring-agent           manifest  deep-health-check   rendered and vendored; the agent and job
job-auto-restart                  manifest  deep-health-check   auto-restart live in the ``aws-hyperpod``
hyperpod-patching                 manifest  —                   namespace deep-health-check creates, the device
nvidia-device-plugin              manifest  —                   plugins in ``kube-system``)
aws-efa-k8s-device-plugin         manifest  —
neuron-device-plugin              manifest  —
aws-load-balancer-controller      manifest  pod identity agent  ``aws-load-balancer-controller`` (kube-system): the
                                                                controller's documented IAM policy — installed by
                                                                the ``load_balancer_controller`` feature only
================================  ========  ==================  =================================================

Health and observability. Of what EKS offers as add-ons (``DescribeAddonVersions``), a fresh cluster gets
``amazon-cloudwatch-observability``: Container Insights with accelerated-compute (GPU, EFA, Neuron) metrics and
container logs, needing nothing but its role. ``amazon-sagemaker-hyperpod-observability`` is *not* installed on
create: it writes to an Amazon Managed Service for Prometheus workspace (and dashboards need Managed Grafana),
resources with their own cost that a user opts into as a managed feature; the HyperPod training
operator, inference operator and task governance add-ons are such features too. They are in the catalog with
``on_create=False`` so :func:`observe` reports them (import, refresh) but nothing here installs them. HyperPod's
health-monitoring agent and deep health checks are not EKS add-ons; the deep health checks are requested on the
instance group by the *hyperpod* phase. AWS requires HyperPod's own dependencies on a cluster set up through the
APIs before HyperPod is attached — the health-monitoring agent, the deep-health-check, job-auto-restart and patching
permissions, and the NVIDIA, EFA and Neuron device plugins, without which no node advertises a GPU, an EFA interface
or a Neuron device. None is an EKS add-on: they are applied from AWS's HyperPod Helm chart, rendered
(``clusters.hyperpod_chart``). The HyperPod training operator's prerequisites are cert-manager and the pod identity
agent, both above.

Add-ons are created with the version EKS defaults to for the cluster's Kubernetes version and never upgraded
here; every one we create carries :func:`clusters.ownership.aws_tags` — which is how :func:`observe` tells ours
(``managed``) from ones installed outside InstantStart, and what :func:`remove` keys on. Pod identity roles
(:mod:`clusters.pod_identity`: deterministic names, our tags, least-privilege policies) are passed through
CreateAddon's ``podIdentityAssociations``; the CloudWatch agent gets AWS's managed CloudWatchAgentServerPolicy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from django.utils import timezone
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from cloud import aws, kube
from clusters import hyperpod_chart, kuberay, pod_identity
from clusters import load_balancer_chart as lb_chart
from clusters.models import Cluster, ClusterDependency, DependencyKind, DependencyState
from clusters.ownership import aws_tags, owned_by
from clusters.pod_identity import PodIdentity, fsx_policy, shared_bucket_policy
from config.errors import ApplicationError

#: EKS add-on status → our dependency state.
ADDON_STATES = {
    "CREATING": DependencyState.INSTALLING,
    "UPDATING": DependencyState.INSTALLING,
    "ACTIVE": DependencyState.ACTIVE,
    "DEGRADED": DependencyState.DEGRADED,
    "CREATE_FAILED": DependencyState.FAILED,
    "UPDATE_FAILED": DependencyState.FAILED,
    "DELETE_FAILED": DependencyState.FAILED,
    "DELETING": DependencyState.REMOVING,
}
#: Why an absent HyperPod chart component matters (its row's ``last_error``).
REQUIRED_BY_HYPERPOD = "HyperPod requires it on EKS clusters set up through the APIs; it is not installed."
#: States that need a person (or a retry) rather than waiting.
PROBLEM_STATES = frozenset({DependencyState.DEGRADED, DependencyState.FAILED})


# catalog ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Component:
    """One dependency. ``on_create``: installed by the create pipeline (else only observed)."""

    name: str
    kind: str
    requires: tuple[str, ...] = ()
    identity: PodIdentity | None = None
    on_create: bool = True


POD_IDENTITY_AGENT = "eks-pod-identity-agent"
CATALOG: tuple[Component, ...] = (
    Component(POD_IDENTITY_AGENT, DependencyKind.ADDON),
    Component("cert-manager", DependencyKind.ADDON),
    Component("aws-mountpoint-s3-csi-driver", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              identity=PodIdentity("s3-csi-driver-sa", "s3-csi", policy=shared_bucket_policy)),
    Component("aws-fsx-csi-driver", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              identity=PodIdentity("fsx-csi-controller-sa", "fsx-csi", policy=fsx_policy)),
    Component("amazon-cloudwatch-observability", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              identity=PodIdentity("cloudwatch-agent", "cloudwatch",
                                   managed_policies=("CloudWatchAgentServerPolicy",))),
    Component(kuberay.NAME, DependencyKind.MANIFEST),
    *(Component(name, DependencyKind.MANIFEST, requires=(hyperpod_chart.DEEP_HEALTH_CHECK,)
                if name in hyperpod_chart.IN_HYPERPOD_NAMESPACE else ()) for name in hyperpod_chart.COMPONENTS),
    Component(lb_chart.NAME, DependencyKind.MANIFEST, requires=(POD_IDENTITY_AGENT,), on_create=False),
    Component("amazon-sagemaker-hyperpod-observability", DependencyKind.ADDON, requires=(POD_IDENTITY_AGENT,),
              on_create=False),
    Component("amazon-sagemaker-hyperpod-training-operator", DependencyKind.ADDON,
              requires=(POD_IDENTITY_AGENT, "cert-manager"), on_create=False),
    Component("amazon-sagemaker-hyperpod-inference", DependencyKind.ADDON,
              requires=(POD_IDENTITY_AGENT, "cert-manager"), on_create=False),
    Component("amazon-sagemaker-hyperpod-taskgovernance", DependencyKind.ADDON, on_create=False),
)
COMPONENTS = {component.name: component for component in CATALOG}
ON_CREATE = tuple(component for component in CATALOG if component.on_create)


# observation -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """One component's actual state. ``status`` is the provider's word (EKS add-on status, or the operator's
    ready/total pods); ``message`` its health issues or why the state is what it is; ``managed`` that it
    carries our tags/labels; ``missing`` the objects of a manifest component that do not exist;
    ``waiting_for_nodes`` that its pods cannot run before the cluster has a node; ``arn`` the add-on's ARN."""

    component: str
    kind: str
    state: str
    version: str = ""
    managed: bool = False
    status: str = ""
    message: str = ""
    arn: str = ""
    missing: tuple[str, ...] = field(default=())
    waiting_for_nodes: bool = False

    @property
    def found(self) -> bool:
        return self.state not in (DependencyState.ABSENT, DependencyState.UNKNOWN)

    @property
    def needs_install(self) -> bool:
        """Absent, or one of our manifest components with objects missing."""
        return self.state == DependencyState.ABSENT or (self.managed and bool(self.missing))

    @property
    def settled(self) -> bool:
        """Nothing more to wait for: active, or applied and waiting only for a node to run on."""
        return self.state == DependencyState.ACTIVE or (
            self.waiting_for_nodes and not self.missing and self.state == DependencyState.INSTALLING)


def _issues(addon: dict[str, Any]) -> str:
    return "; ".join(f"{issue.get('code', '')}: {issue.get('message', '')}".strip(": ")
                     for issue in addon.get("health", {}).get("issues") or [])


def addon_observation(cluster: Cluster, addon: dict[str, Any]) -> Observation:
    """An :class:`Observation` from a DescribeAddon/CreateAddon ``addon``."""
    return Observation(
        component=addon["addonName"], kind=DependencyKind.ADDON,
        state=ADDON_STATES.get(addon.get("status", ""), DependencyState.UNKNOWN),
        version=addon.get("addonVersion", ""), managed=owned_by(addon.get("tags"), cluster),
        status=addon.get("status", ""), message=_issues(addon), arn=addon.get("addonArn", ""))


def _absent(component: Component, message: str = "") -> Observation:
    return Observation(component=component.name, kind=component.kind, state=DependencyState.ABSENT, message=message)


def _eks(cluster: Cluster):
    return aws.client("eks", region=cluster.region)


def _installed_addons(cluster: Cluster) -> set[str] | None:
    """The add-ons on the cluster's EKS cluster; ``None`` when there is no EKS cluster (yet, or any more)."""
    if not cluster.eks_name:
        return None
    eks = _eks(cluster)
    names: set[str] = set()
    try:
        for page in eks.get_paginator("list_addons").paginate(clusterName=cluster.eks_name):
            names.update(page.get("addons", []))
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return None
        raise
    return names


def describe_addon(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """DescribeAddon's ``addon``, or ``None`` when it (or the EKS cluster) does not exist."""
    try:
        return _eks(cluster).describe_addon(clusterName=cluster.eks_name, addonName=name)["addon"]
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return None
        raise


def observe_operator(cluster: Cluster) -> Observation:
    """The KubeRay operator's state (see :func:`observe`)."""
    component = COMPONENTS[kuberay.NAME]
    status = kuberay.observe(cluster, kube.api_client(cluster.eks_name, region=cluster.region))
    if not status.found:
        return _absent(component)
    pods = f"{status.ready_replicas}/{status.replicas} ready"
    if status.missing and status.managed:
        state, message = DependencyState.INSTALLING, "Not applied yet: " + ", ".join(status.missing)
    elif status.replicas == 0:
        state, message = DependencyState.DEGRADED, "The ray.io CRDs are installed but no KubeRay operator runs."
    elif status.ready:
        state, message = DependencyState.ACTIVE, ""
    elif not status.has_ready_node:
        state, message = DependencyState.INSTALLING, "Waiting for a node to run on (HyperPod nodes join later)."
    else:
        state, message = DependencyState.INSTALLING, f"Operator pods {pods}."
    if status.foreign and not status.managed:
        message = " ".join(filter(None, ["Installed outside InstantStart.", message]))
    return Observation(component=component.name, kind=component.kind, state=state, version=status.version,
                       managed=status.managed, status=pods, message=message,
                       missing=status.missing if status.managed else (),
                       waiting_for_nodes=not status.ready and not status.has_ready_node)


def observe_chart_component(cluster: Cluster, component: Component) -> Observation:
    """The state of one of HyperPod's chart components (see :func:`observe`)."""
    status = hyperpod_chart.observe(cluster, kube.api_client(cluster.eks_name, region=cluster.region), component.name)
    if not status.found:
        return _absent(component)
    pods = f"{status.ready}/{status.desired} pods ready" if status.daemon_sets else "applied"
    if status.missing and status.managed:
        state, message = DependencyState.INSTALLING, "Not applied yet: " + ", ".join(status.missing)
    elif status.missing and not status.elsewhere:
        state, message = DependencyState.DEGRADED, "Missing: " + ", ".join(status.missing)
    elif status.ready_pods:
        state, message = DependencyState.ACTIVE, ""
    else:
        state, message = DependencyState.INSTALLING, f"DaemonSet pods {pods}."
    if not status.managed:
        where = f" ({status.elsewhere})" if status.elsewhere else ""
        message = " ".join(filter(None, [f"Installed outside InstantStart{where}.", message]))
    return Observation(component=component.name, kind=component.kind, state=state, version=status.version,
                       managed=status.managed, status=pods, message=message,
                       missing=status.missing if status.managed else ())


def observe_load_balancer_controller(cluster: Cluster) -> Observation:
    """The AWS Load Balancer Controller's state (see :func:`observe`)."""
    component = COMPONENTS[lb_chart.NAME]
    status = lb_chart.observe(cluster, kube.api_client(cluster.eks_name, region=cluster.region))
    if not status.found and not status.managed:
        return _absent(component)
    pods = f"{status.ready}/{status.replicas} ready"
    if status.missing:
        state, message = DependencyState.INSTALLING, "Not applied yet: " + ", ".join(status.missing)
    elif status.running:
        state, message = DependencyState.ACTIVE, ""
    elif status.stuck:
        state, message = DependencyState.DEGRADED, status.problem
    else:
        state, message = DependencyState.INSTALLING, f"Controller pods {pods}."
    if not status.managed:
        message = " ".join(filter(None, ["Installed outside InstantStart.", message]))
    return Observation(component=component.name, kind=component.kind, state=state,
                       version=lb_chart.version() if status.managed else "", managed=status.managed, status=pods,
                       message=message, missing=status.missing)


def observe_component(cluster: Cluster, component: Component, *, installed: set[str] | None) -> Observation:
    """``component``'s state; ``installed`` is the cluster's add-on names (``None``: no EKS cluster)."""
    if installed is None:
        return _absent(component, "The cluster has no EKS control plane.")
    if component.name in hyperpod_chart.COMPONENTS:
        return observe_chart_component(cluster, component)
    if component.name == lb_chart.NAME:
        return observe_load_balancer_controller(cluster)
    if component.kind == DependencyKind.MANIFEST:
        return observe_operator(cluster)
    addon = describe_addon(cluster, component.name) if component.name in installed else None
    return _absent(component) if addon is None else addon_observation(cluster, addon)


def observe(cluster: Cluster, *, strict: bool = False) -> list[Observation]:
    """Every catalog component's actual state on ``cluster``, in catalog order, changing nothing.

    Add-ons: ListAddons, then DescribeAddon for the ones there (status, version, health issues; ``managed``
    when it carries our tags). KubeRay: our objects, the operator's Deployment (ours or one found by its
    release label), its image tag and readiness. A cluster without an EKS control plane reports everything
    absent. A Kubernetes API that cannot be read makes the KubeRay observation ``unknown`` with the reason —
    unless ``strict``, where the error is raised (the pipeline wants the engine to judge it)."""
    with aws.translated("eks", "DescribeAddon"):
        installed = _installed_addons(cluster)
        observations = []
        for component in CATALOG:
            try:
                observations.append(observe_component(cluster, component, installed=installed))
            except (ApiException, HTTPError, OSError, ApplicationError) as error:
                if strict:
                    raise
                reason = error.message if isinstance(error, ApplicationError) else kube.translate(error).message
                observations.append(Observation(component=component.name, kind=component.kind,
                                                state=DependencyState.UNKNOWN, message=reason))
    return observations


def record(cluster: Cluster, observations: Iterable[Observation]) -> list[ClusterDependency]:
    """Write what was observed into ``cluster``'s ClusterDependency rows and return them.

    A row is kept for every component the create pipeline installs and for any other component found.
    ``managed`` follows the tags/labels of what was found (``False``: installed outside InstantStart); a
    component not found keeps its row's ``managed`` and ``desired_state`` (new rows: desired ``active``).
    ``last_error`` holds the health issues of a degraded or failed component, why an ``unknown`` one could
    not be read (which keeps the version it had), or :data:`REQUIRED_BY_HYPERPOD` for an absent HyperPod chart
    component, and is cleared otherwise."""
    now = timezone.now()
    recorded = set(ClusterDependency.objects.filter(cluster=cluster).values_list("component", flat=True))
    rows = []
    for seen in observations:
        if seen.component not in recorded and not seen.found and not COMPONENTS[seen.component].on_create:
            continue
        values: dict[str, Any] = {
            "kind": seen.kind, "observed_state": seen.state, "observed_at": now,
            "last_error": seen.message if seen.state in PROBLEM_STATES | {DependencyState.UNKNOWN} else
            REQUIRED_BY_HYPERPOD if seen.state == DependencyState.ABSENT and seen.component in hyperpod_chart.COMPONENTS
            else ""}
        if seen.found:
            values["managed"] = seen.managed
        if seen.state != DependencyState.UNKNOWN:
            values["version"] = seen.version
        row, _ = ClusterDependency.objects.update_or_create(cluster=cluster, component=seen.component,
                                                            defaults=values)
        rows.append(row)
    return rows


def settle(cluster: Cluster) -> list[Observation]:
    """Observe and record every component again; return those the create pipeline installs that are still
    starting (``installing``) or in trouble (:data:`PROBLEM_STATES`). The last phase of ``cluster.create`` waits
    on this: the operator's pods can only start once HyperPod's nodes have joined, after the dependencies phase
    ended."""
    observations = observe(cluster, strict=True)
    record(cluster, observations)
    return [seen for seen in observations if COMPONENTS[seen.component].on_create
            and seen.state in PROBLEM_STATES | {DependencyState.INSTALLING}]


# installation ----------------------------------------------------------------------------------------------------


def addon_request(cluster: Cluster, component: Component, *, token: str, role_arn: str) -> dict[str, Any]:
    """The ``CreateAddon`` :func:`install_addon` sends (``role_arn``: the component's pod identity role, when it
    has one)."""
    params: dict[str, Any] = {"clusterName": cluster.eks_name, "addonName": component.name,
                              "clientRequestToken": token, "tags": aws_tags(cluster, component.name)}
    if component.identity is not None:
        params["podIdentityAssociations"] = [{"serviceAccount": component.identity.service_account,
                                              "roleArn": role_arn}]
    return params


def install_addon(cluster: Cluster, component: Component, *, token: str) -> Observation:
    """CreateAddon for ``component`` (tagged as ours, with its pod identity role) under ``token`` — a
    ``clientRequestToken`` the caller persisted before calling. An add-on that exists already is adopted."""
    role_arn = pod_identity.ensure_role(cluster, component.identity) if component.identity is not None else ""
    params = addon_request(cluster, component, token=token, role_arn=role_arn)
    with aws.translated("eks", "CreateAddon"):
        try:
            addon = _eks(cluster).create_addon(**params)["addon"]
        except ClientError as error:
            addon = describe_addon(cluster, component.name) if aws.error_is(error, "ResourceInUseException") else None
            if addon is None:
                raise
    return addon_observation(cluster, addon)


def delete_addon_request(cluster: Cluster, name: str) -> dict[str, Any]:
    """The ``DeleteAddon`` :func:`replace_addon` sends."""
    return {"clusterName": cluster.eks_name, "addonName": name}


def replace_addon(cluster: Cluster, name: str) -> None:
    """DeleteAddon (so that it can be created again); nothing when it is gone already."""
    with aws.translated("eks", "DeleteAddon"):
        try:
            _eks(cluster).delete_addon(**delete_addon_request(cluster, name))
        except ClientError as error:
            if not aws.error_is(error, "ResourceNotFoundException"):
                raise


def install_operator(cluster: Cluster) -> list[str]:
    """Create the KubeRay objects that are missing; returns what was created."""
    return kuberay.apply(cluster, kube.api_client(cluster.eks_name, region=cluster.region))


def manifest_version(component: Component) -> str:
    """The pinned version a manifest component is applied at."""
    if component.name == lb_chart.NAME:
        return lb_chart.version()
    return hyperpod_chart.version(component.name) if component.name in hyperpod_chart.COMPONENTS else kuberay.VERSION


def install_manifests(cluster: Cluster, component: Component) -> Observation:
    """Create the missing objects of a manifest component (KubeRay, or one of HyperPod's chart components) and
    return its state after."""
    if component.name in hyperpod_chart.COMPONENTS:
        hyperpod_chart.apply(cluster, kube.api_client(cluster.eks_name, region=cluster.region), component.name)
        return observe_chart_component(cluster, component)
    if component.name == lb_chart.NAME:
        lb_chart.apply(cluster, kube.api_client(cluster.eks_name, region=cluster.region))
        return observe_load_balancer_controller(cluster)
    install_operator(cluster)
    return observe_operator(cluster)


def reinstall_missing(cluster: Cluster, observations: Iterable[Observation]) -> list[str]:
    """Apply again each manifest component we installed (its row ``managed``, wanted ``active``) that
    ``observations`` found absent or missing objects — what a refresh does; returns the components applied. Only
    Kubernetes objects: add-ons, which EKS keeps, are never re-created here."""
    wanted = set(ClusterDependency.objects.filter(cluster=cluster, managed=True, kind=DependencyKind.MANIFEST,
                                                  desired_state=DependencyState.ACTIVE)
                 .values_list("component", flat=True))
    applied = []
    for seen in observations:
        if seen.component in wanted and (seen.state == DependencyState.ABSENT or seen.missing):
            try:
                install_manifests(cluster, COMPONENTS[seen.component])
            except (ApiException, HTTPError, OSError):
                continue  # the observation that follows reports the component as it is
            applied.append(seen.component)
    return applied


def report_required(cluster: Cluster, observations: Iterable[Observation]) -> list[str]:
    """Record HyperPod's chart components that ``observations`` did not find on an imported ``cluster`` as absent
    and not ours, with :data:`REQUIRED_BY_HYPERPOD` — reported, not installed (an import changes nothing on the
    cluster; a refresh keeps reporting them, as their rows are not ``managed``); returns their names."""
    absent = [seen for seen in observations
              if seen.component in hyperpod_chart.COMPONENTS and seen.state == DependencyState.ABSENT]
    for seen in absent:
        ClusterDependency.objects.update_or_create(cluster=cluster, component=seen.component,
                                                   defaults={"managed": False})
    record(cluster, absent)
    return [seen.component for seen in absent]


# removal ---------------------------------------------------------------------------------------------------------


def _serving(cluster: Cluster) -> bool:
    if not cluster.eks_name:
        return False
    try:
        status = _eks(cluster).describe_cluster(name=cluster.eks_name)["cluster"]["status"]
    except ClientError as error:
        if aws.error_is(error, "ResourceNotFoundException"):
            return False
        raise
    return status in kube.SERVING_STATUSES


def remove(cluster: Cluster) -> list[str]:
    """Start removing what we installed on ``cluster`` — add-ons carrying our tags (DeleteAddon, once each), KubeRay,
    HyperPod chart and load balancer controller objects carrying our labels — and return what is still there.
    Level-triggered: call it until it returns nothing; add-ons and objects installed by others are never touched."""
    remaining = []
    with aws.translated("eks", "DeleteAddon"):
        for name in sorted(_installed_addons(cluster) or ()):
            addon = describe_addon(cluster, name)
            if addon is None or not owned_by(addon.get("tags"), cluster):
                continue
            if addon["status"] != "DELETING":
                replace_addon(cluster, name)
            remaining.append(name)
        if _serving(cluster):
            api = kube.api_client(cluster.eks_name, region=cluster.region)
            if kuberay.remove(cluster, api):
                remaining.append(kuberay.NAME)
            remaining.extend(name for name in reversed(hyperpod_chart.COMPONENTS)
                             if hyperpod_chart.remove(cluster, api, name))
            if lb_chart.remove(cluster, api):
                remaining.append(lb_chart.NAME)
    return remaining


def remove_roles(cluster: Cluster) -> list[str]:
    """Delete the pod identity roles we created for ``cluster`` (only those with our tags), with their
    policies; returns the names deleted. Call it once the add-ons using them are gone."""
    return [name for component in CATALOG if component.identity is not None
            for name in [pod_identity.delete_role(cluster, component.identity)] if name]
