"""Discovery documents (``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>[/<version>]``) in the
shapes the client's models and ``DynamicClient`` read: every served type with kind, verbs, scope, short
names and categories, and its subresources as ``<plural>/status``, ``<plural>/scale`` (kind ``Scale`` in
``autoscaling/v1``) and ``pods/log`` entries."""

from __future__ import annotations

from typing import Any

from sandbox.kube.resources import ALL_VERBS, Registry, ResourceType

_SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"], "log": ["get"]}


def version(kubernetes_version: str) -> dict[str, Any]:
    """``/version`` as EKS answers it (``minor`` carries EKS's ``+``)."""
    major, _, minor = kubernetes_version.partition(".")
    return {"major": major, "minor": f"{minor}+", "emulationMajor": major, "emulationMinor": minor,
            "gitVersion": f"v{kubernetes_version}.0-eks-sandbox", "gitCommit": "0" * 40, "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.6", "compiler": "gc",
            "platform": "linux/amd64"}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:443"}]}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group(name, versions) for name, versions in registry.group_versions().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _entries(resource_type: ResourceType) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {"name": resource_type.plural, "singularName": resource_type.singular,
                             "namespaced": resource_type.namespaced, "kind": resource_type.kind,
                             "verbs": list(ALL_VERBS)}
    if resource_type.short_names:
        entry["shortNames"] = list(resource_type.short_names)
    if resource_type.categories:
        entry["categories"] = list(resource_type.categories)
    entries = [entry]
    for subresource in sorted(resource_type.subresources):
        sub: dict[str, Any] = {"name": f"{resource_type.plural}/{subresource}", "singularName": "",
                               "namespaced": resource_type.namespaced, "kind": resource_type.kind,
                               "verbs": _SUBRESOURCE_VERBS[subresource]}
        if subresource == "scale":
            sub.update(group="autoscaling", version="v1", kind="Scale")
        entries.append(sub)
    return entries


def api_resource_list(registry: Registry, group: str, group_version: str) -> dict[str, Any] | None:
    """The ``APIResourceList`` of one group version, or ``None`` when it is not served."""
    served = [t for t in registry.all() if t.group == group and group_version in t.versions]
    if not served:
        return None
    resources = [entry for resource_type in sorted(served, key=lambda t: t.plural) for entry in _entries(resource_type)]
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{group_version}" if group else group_version, "resources": resources}
