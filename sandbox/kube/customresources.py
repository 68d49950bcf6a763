"""CustomResourceDefinitions as the apiextensions apiserver treats them: defaults, checks, status, and the
``ResourceType`` a CRD makes the server serve (every ``served`` version with its own schema and
subresources; objects are stored once, in the storage version, without conversion)."""

from __future__ import annotations

import re
from typing import Any

from sandbox.kube import celrules
from sandbox.kube.errors import FieldError, invalid, required
from sandbox.kube.meta import rfc3339
from sandbox.kube.resources import ResourceType, sort_versions


def apply_defaults(crd: dict[str, Any]) -> None:
    """Fill what the apiserver defaults: singular, listKind, conversion strategy, version flags."""
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})
    for version in spec.get("versions") or []:
        version.setdefault("served", True)
        version.setdefault("storage", False)


def _pattern_errors(node: Any, path: str) -> list[FieldError]:
    """Regular expressions and CEL rules in a schema must compile (the apiserver rejects the CRD otherwise)."""
    if isinstance(node, list):
        return [error for index, item in enumerate(node) for error in _pattern_errors(item, f"{path}[{index}]")]
    if not isinstance(node, dict):
        return []
    found: list[FieldError] = []
    for index, rule in enumerate(node.get("x-kubernetes-validations") or []):
        problem = celrules.compile_error(rule.get("rule") or "") if isinstance(rule, dict) else "must be an object"
        if problem:
            found.append(invalid(f"{path}.x-kubernetes-validations[{index}].rule",
                                 rule.get("rule") if isinstance(rule, dict) else rule,
                                 f"compilation failed: {problem}"))
    if isinstance(node.get("pattern"), str):
        try:
            re.compile(node["pattern"])
        except re.error as problem:
            found.append(invalid(f"{path}.pattern", node["pattern"], f"must be a valid regular expression: {problem}"))
    for key, value in node.items():
        if key in ("properties", "patternProperties", "definitions"):
            found += [e for name, sub in value.items() for e in _pattern_errors(sub, f"{path}.{key}[{name}]")]
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            found += _pattern_errors(value, f"{path}.{key}")
    return found


def errors(crd: dict[str, Any]) -> list[FieldError]:
    """The CRD rules that matter for serving it: name = plural.group, one storage version, known scope."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    found: list[FieldError] = []
    for field in ("plural", "kind"):
        if not names.get(field):
            found.append(required(f"spec.names.{field}"))
    if not spec.get("group"):
        found.append(required("spec.group"))
    expected = f"{names.get('plural')}.{spec.get('group')}"
    name = (crd.get("metadata") or {}).get("name")
    if names.get("plural") and spec.get("group") and name != expected:
        found.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        found.append(invalid("spec.scope", spec.get("scope"), 'must be either "Namespaced" or "Cluster"'))
    versions = spec.get("versions") or []
    for index, version in enumerate(versions):
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        found += _pattern_errors(schema, f"spec.versions[{index}].schema.openAPIV3Schema")
    if not versions:
        found.append(required("spec.versions", "must have exactly one version marked as storage version"))
    elif sum(1 for version in versions if version.get("storage")) != 1:
        found.append(invalid("spec.versions", [v.get("name") for v in versions],
                             "must have exactly one version marked as storage version"))
    return found


def status(crd: dict[str, Any]) -> dict[str, Any]:
    """The status of an accepted CRD: names accepted, Established, storage version recorded."""
    spec = crd.get("spec") or {}
    now = rfc3339()
    conditions = [
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found",
         "lastTransitionTime": now},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted", "lastTransitionTime": now},
    ]
    storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    previous = ((crd.get("status") or {}).get("storedVersions")) or []
    return {"acceptedNames": dict(spec.get("names") or {}), "conditions": conditions,
            "storedVersions": [*previous, *[v for v in storage if v not in previous]]}


def _scale_paths(version: dict[str, Any]) -> tuple[str, str, str] | None:
    scale = (version.get("subresources") or {}).get("scale")
    if scale is None:
        return None
    return (scale.get("specReplicasPath", ".spec.replicas"), scale.get("statusReplicasPath", ".status.replicas"),
            scale.get("labelSelectorPath", ""))


def resource_type(crd: dict[str, Any]) -> ResourceType:
    """The served type of an accepted CRD (the storage version is the preferred one)."""
    spec = crd["spec"]
    names = spec["names"]
    served = [v for v in spec["versions"] if v.get("served", True)]
    storage = next(v for v in spec["versions"] if v.get("storage"))
    subresources = set().union(*[set((v.get("subresources") or {}).keys()) for v in served])
    return ResourceType(
        group=spec["group"], version=storage["name"], kind=names["kind"], plural=names["plural"],
        namespaced=spec["scope"] == "Namespaced", short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()), subresources=frozenset(subresources),
        versions=tuple(sort_versions(v["name"] for v in served)), singular=names.get("singular", ""),
        schemas={v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True} for v in served},
        scale_paths=_scale_paths(storage), custom=True,
    )
