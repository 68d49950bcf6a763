"""EKS add-ons: the catalog (``DescribeAddonVersions``) and the add-on lifecycle on a cluster.

The catalog offers the add-ons the product installs, under the names AWS uses. Version strings follow AWS's
``vX.Y.Z-eksbuild.N`` form but are sandbox values; the first version of each entry is the default. An add-on
is CREATING, UPDATING or DELETING for ``eks_model.ADDON_SECONDS`` and then ACTIVE (or gone), unless a tag
``sandbox:fail`` / ``sandbox:degrade`` or an outcome rule makes it CREATE_FAILED or DEGRADED with a health
issue. ``podIdentityAssociations`` given to an add-on become pod identity associations it owns.

Some add-ons need others first (``REQUIRES``): created while one of those is not installed (ACTIVE or
UPDATING), the add-on ends CREATING as CREATE_FAILED with a ``ConfigurationConflict`` health issue naming what is
missing — so a client that installs in the wrong order sees it fail, as the operator's pods would on EKS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sandbox import clock
from sandbox.aws import core, eks, outcomes
from sandbox.aws.core import ApiError, Call, operation
from sandbox.aws.eks_model import Addon, EksCluster, PodIdentity


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    type: str
    versions: tuple[str, ...]
    namespace: str
    owner: str = "aws"
    iam: bool = False


CATALOG = {entry.name: entry for entry in (
    CatalogEntry("vpc-cni", "networking", ("v1.20.4-eksbuild.1", "v1.19.6-eksbuild.7"), "kube-system", iam=True),
    CatalogEntry("coredns", "networking", ("v1.12.4-eksbuild.1", "v1.11.4-eksbuild.14"), "kube-system"),
    CatalogEntry("kube-proxy", "networking", ("v1.33.3-eksbuild.6", "v1.32.6-eksbuild.8"), "kube-system"),
    CatalogEntry("eks-pod-identity-agent", "security", ("v1.3.9-eksbuild.3", "v1.3.8-eksbuild.2"), "kube-system"),
    CatalogEntry("aws-ebs-csi-driver", "storage", ("v1.48.0-eksbuild.2", "v1.46.0-eksbuild.1"), "kube-system",
                 iam=True),
    CatalogEntry("aws-mountpoint-s3-csi-driver", "storage", ("v2.1.0-eksbuild.1", "v1.15.0-eksbuild.1"),
                 "kube-system", iam=True),
    CatalogEntry("aws-fsx-csi-driver", "storage", ("v1.6.0-eksbuild.1", "v1.5.0-eksbuild.1"), "kube-system",
                 iam=True),
    CatalogEntry("cert-manager", "security", ("v1.18.2-eksbuild.2", "v1.17.2-eksbuild.1"), "cert-manager",
                 owner="community"),
    CatalogEntry("metrics-server", "observability", ("v0.8.0-eksbuild.2", "v0.7.2-eksbuild.3"), "kube-system",
                 owner="community"),
    CatalogEntry("amazon-cloudwatch-observability", "observability", ("v4.5.0-eksbuild.1", "v4.4.0-eksbuild.1"),
                 "amazon-cloudwatch", iam=True),
    CatalogEntry("amazon-sagemaker-hyperpod-training-operator", "machine-learning",
                 ("v1.2.0-eksbuild.1", "v1.1.0-eksbuild.1"), "aws-hyperpod", iam=True),
    CatalogEntry("amazon-sagemaker-hyperpod-inference", "machine-learning", ("v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"),
                 "hyperpod-inference-system", iam=True),
    CatalogEntry("amazon-sagemaker-hyperpod-observability", "observability",
                 ("v1.0.3-eksbuild.1", "v1.0.2-eksbuild.1"), "hyperpod-observability", iam=True),
    CatalogEntry("amazon-sagemaker-hyperpod-taskgovernance", "machine-learning",
                 ("v1.3.0-eksbuild.1", "v1.2.0-eksbuild.1"), "kueue-system"),
)}


#: Add-on → the add-ons that must be installed before it is created.
REQUIRES: dict[str, tuple[str, ...]] = {
    "amazon-sagemaker-hyperpod-training-operator": ("cert-manager", "eks-pod-identity-agent"),
    "amazon-sagemaker-hyperpod-inference": ("cert-manager", "eks-pod-identity-agent"),
}
_INSTALLED = ("ACTIVE", "UPDATING")


def _missing_prerequisites(cluster: EksCluster, name: str) -> tuple[str, str] | None:
    """A failure outcome naming the prerequisites of ``name`` not installed on ``cluster`` (``None`` if all are)."""
    missing = [required for required in REQUIRES.get(name, ())
               if required not in cluster.addons or cluster.addons[required].status not in _INSTALLED]
    if not missing:
        return None
    return "fail", (f"Add-on {name} requires {', '.join(REQUIRES[name])} to be installed first; missing: "
                    f"{', '.join(missing)}.")


def _not_found(cluster: EksCluster, name: str) -> ApiError:
    return ApiError("ResourceNotFoundException", f"No addon: {name} found in cluster: {cluster.name}",
                    clusterName=cluster.name, addonName=name)


def lookup(call: Call) -> tuple[EksCluster, Addon]:
    cluster = eks.lookup(call, "clusterName")
    addon = cluster.addons.get(call.params["addonName"])
    if addon is None:
        raise _not_found(cluster, call.params["addonName"])
    return cluster, addon


def render(cluster: EksCluster, addon: Addon) -> dict[str, Any]:
    spec = addon.spec
    return {
        "addonName": addon.name, "clusterName": cluster.name, "status": addon.status,
        "addonVersion": addon.version, "health": {"issues": addon.issues}, "addonArn": addon.arn,
        "createdAt": core.utc(addon.created_at), "modifiedAt": core.utc(addon.modified_at),
        "serviceAccountRoleArn": spec.get("serviceAccountRoleArn"), "tags": addon.tags or None,
        "publisher": "eks", "owner": CATALOG[addon.name].owner,
        "configurationValues": spec.get("configurationValues"),
        "podIdentityAssociations": addon.pod_identity_arns,
        "namespaceConfig": spec.get("namespaceConfig") or {"namespace": CATALOG[addon.name].namespace},
    }


def _check_settings(cluster: EksCluster, name: str, call: Call) -> str:
    """The add-on version to install; validates version, configuration values and pod identities."""
    entry = CATALOG[name]
    version = call.get("addonVersion", entry.versions[0])
    if version not in entry.versions:
        raise eks.invalid(f"Addon version specified is not supported: {version}", clusterName=cluster.name,
                          addonName=name)
    values = call.get("configurationValues")
    if values and values.lstrip().startswith("{"):
        try:
            json.loads(values)
        except ValueError as error:
            raise eks.invalid(f"ConfigurationValue provided in request is not supported: {error}",
                              clusterName=cluster.name, addonName=name) from error
    owner = cluster.addons[name].arn if name in cluster.addons else None
    for association in call.get("podIdentityAssociations", []):
        clash = any(a.namespace == entry.namespace and a.service_account == association["serviceAccount"]
                    and (owner is None or a.owner_arn != owner) for a in cluster.pod_identities.values())
        if clash:
            raise ApiError("ResourceInUseException",
                           f"Association already exists for service account {association['serviceAccount']} in "
                           f"namespace {entry.namespace}.", clusterName=cluster.name, addonName=name)
    return version


def _own_pod_identities(cluster: EksCluster, addon: Addon, associations: list[dict[str, str]]) -> None:
    for association in [a for a in cluster.pod_identities.values() if a.owner_arn == addon.arn]:
        del cluster.pod_identities[association.id]
    addon.pod_identity_arns = []
    now = clock.now()
    for item in associations:
        association_id = "a-" + core.lower_alnum(17)
        association = PodIdentity(
            id=association_id, arn=core.arn("eks", cluster.region,
                                            f"podidentityassociation/{cluster.name}/{association_id}"),
            namespace=CATALOG[addon.name].namespace, service_account=item["serviceAccount"],
            role_arn=item["roleArn"], created_at=now, modified_at=now, tags={}, owner_arn=addon.arn)
        cluster.pod_identities[association_id] = association
        addon.pod_identity_arns.append(association.arn)


@operation("eks", "CreateAddon")
def create_addon(call: Call) -> dict[str, Any]:
    cluster = eks.lookup(call, "clusterName")
    name = call.params["addonName"]
    if name not in CATALOG:
        raise eks.invalid(f"Addon {name} specified is not supported", clusterName=cluster.name, addonName=name)
    eks.require_active(cluster)
    if name in cluster.addons:
        raise ApiError("ResourceInUseException", "Addon already exists.", clusterName=cluster.name, addonName=name)
    version = _check_settings(cluster, name, call)
    addon_tags = dict(call.get("tags", {}))
    now = clock.now()
    settings = ("serviceAccountRoleArn", "configurationValues", "resolveConflicts", "namespaceConfig")
    addon = Addon(name=name, arn=core.arn("eks", cluster.region, f"addon/{cluster.name}/{name}/{core.new_uuid()}"),
                  version=version, created_at=now, since=now, modified_at=now, tags=addon_tags,
                  spec={key: call.params[key] for key in settings if key in call.params},
                  outcome=_missing_prerequisites(cluster, name) or outcomes.take("eks-addon", name, addon_tags))
    cluster.addons[name] = addon
    _own_pod_identities(cluster, addon, call.get("podIdentityAssociations", []))
    return {"addon": render(cluster, addon)}


@operation("eks", "DescribeAddon")
def describe_addon(call: Call) -> dict[str, Any]:
    cluster, addon = lookup(call)
    return {"addon": render(cluster, addon)}


@operation("eks", "ListAddons")
def list_addons(call: Call) -> dict[str, Any]:
    cluster = eks.lookup(call, "clusterName")
    page, token = core.paginate(sorted(cluster.addons), call.get("nextToken"), call.get("maxResults"))
    return {"addons": page, "nextToken": token}


@operation("eks", "UpdateAddon")
def update_addon(call: Call) -> dict[str, Any]:
    cluster, addon = lookup(call)
    if addon.status in ("CREATING", "UPDATING", "DELETING"):
        raise ApiError("ResourceInUseException", f"Addon {addon.name} is in {addon.status} state.",
                       clusterName=cluster.name, addonName=addon.name)
    version = _check_settings(cluster, addon.name, call) if call.get("addonVersion") else addon.version
    params = [{"type": "AddonVersion", "value": version}]
    for key, param_type in (("serviceAccountRoleArn", "ServiceAccountRoleArn"),
                            ("configurationValues", "ConfigurationValues"), ("resolveConflicts", "ResolveConflicts")):
        if key in call.params:
            addon.spec[key] = call.params[key]
            params.append({"type": param_type, "value": call.params[key]})
    if "podIdentityAssociations" in call.params:
        _check_settings(cluster, addon.name, call)
        _own_pod_identities(cluster, addon, call.params["podIdentityAssociations"])
        params.append({"type": "PodIdentityAssociations", "value": json.dumps(addon.pod_identity_arns)})
    addon.version, addon.status, addon.since, addon.modified_at = version, "UPDATING", clock.now(), clock.now()
    return {"update": eks.start_addon_update(cluster, addon.name, params)}


@operation("eks", "DeleteAddon")
def delete_addon(call: Call) -> dict[str, Any]:
    cluster, addon = lookup(call)
    if addon.status != "DELETING":
        addon.status, addon.since = "DELETING", clock.now()
    return {"addon": render(cluster, addon)}


def _addon_info(entry: CatalogEntry, kubernetes_version: str | None) -> dict[str, Any]:
    cluster_versions = [kubernetes_version] if kubernetes_version else list(eks.SUPPORTED_VERSIONS)
    return {
        "addonName": entry.name, "type": entry.type, "publisher": "eks", "owner": entry.owner,
        "defaultNamespace": entry.namespace,
        "addonVersions": [{
            "addonVersion": version, "architecture": ["amd64", "arm64"], "computeTypes": ["ec2"],
            "compatibilities": [{"clusterVersion": cluster_version, "platformVersions": ["*"],
                                 "defaultVersion": index == 0} for cluster_version in cluster_versions],
            "requiresConfiguration": False, "requiresIamPermissions": entry.iam,
        } for index, version in enumerate(entry.versions)],
    }


@operation("eks", "DescribeAddonVersions")
def describe_addon_versions(call: Call) -> dict[str, Any]:
    kubernetes_version = call.get("kubernetesVersion")
    if kubernetes_version is not None and kubernetes_version not in eks.SUPPORTED_VERSIONS:
        return {"addons": []}
    entries = [entry for entry in CATALOG.values()
               if call.get("addonName") in (None, entry.name)
               and (not call.get("types") or entry.type in call.params["types"])
               and (not call.get("owners") or entry.owner in call.params["owners"])
               and (not call.get("publishers") or "eks" in call.params["publishers"])]
    page, token = core.paginate(entries, call.get("nextToken"), call.get("maxResults"))
    return {"addons": [_addon_info(entry, kubernetes_version) for entry in page], "nextToken": token}


@operation("eks", "DescribeAddonConfiguration")
def describe_addon_configuration(call: Call) -> dict[str, Any]:
    entry = CATALOG.get(call.params["addonName"])
    if entry is None or call.params["addonVersion"] not in entry.versions:
        raise ApiError("ResourceNotFoundException", f"No addon version {call.params['addonVersion']} found for "
                                                    f"{call.params['addonName']}", addonName=call.params["addonName"])
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": True}
    return {"addonName": entry.name, "addonVersion": call.params["addonVersion"],
            "configurationSchema": json.dumps(schema)}
