"""Admission of an object about to be stored: pruning, schema validation and the apiserver's semantic rules.

``prune`` drops unknown fields (returning ``unknown field`` warnings, or a 400 under
``fieldValidation=Strict``); ``check`` raises a 422 ``Invalid`` listing every field error: metadata
(names, labels), the schema (a CRD version's ``openAPIV3Schema``, or the client model of a built-in) and,
for built-ins, the rules the product is most likely to trip: pods need containers with images, workload
selectors must match their template, Jobs need ``Never``/``OnFailure``, Services need ports, a Pod's
spec is mostly immutable, NetworkPolicies name known policy types and protocols and valid CIDRs. Custom
resources then have their CEL rules evaluated (``celrules``) unless a value has the wrong type, as the apiserver
does.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from sandbox.kube import celrules, meta
from sandbox.kube.errors import (
    FieldError,
    bad_request,
    forbidden,
    invalid,
    invalid_object,
    not_supported,
    required,
)
from sandbox.kube.modelschema import model_schema
from sandbox.kube.resources import ResourceType
from sandbox.kube.schema import object_schema
from sandbox.kube.selectors import SELECTOR_OPERATORS, match_labels

_WORKLOADS = ("deployments", "replicasets", "statefulsets", "daemonsets")
#: The API server's default ``--service-node-port-range``.
NODE_PORTS = (30000, 32767)
_POD_MUTABLE = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates")


def _schema(resource_type: ResourceType, version: str | None) -> dict[str, Any] | None:
    if resource_type.custom:
        return resource_type.schema(version)
    return model_schema(resource_type.model)


def prune(resource_type: ResourceType, obj: dict[str, Any], version: str | None = None, *,
          strict: bool = False) -> list[str]:
    """Prune (and, for CRDs, default) ``obj`` in place; returns ``unknown field`` warnings."""
    schema = _schema(resource_type, version)
    if schema is None:
        return []
    dropped = object_schema(schema).prune(obj, quantities_as_strings=not resource_type.custom)
    if strict and dropped:
        raise bad_request("strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in dropped))
    return [f'unknown field "{path}"' for path in dropped]


def _containers(spec: Any, path: str) -> list[FieldError]:
    if not isinstance(spec, dict):
        return [required(path)]
    containers = spec.get("containers")
    if not containers:
        return [required(f"{path}.containers")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or []):
            if not isinstance(container, dict):
                continue
            where = f"{path}.{field}[{index}]"
            name = container.get("name")
            if isinstance(name, str):
                errors += meta.name_errors(name, "label", f"{where}.name")
                if name in seen:
                    errors.append(FieldError("Duplicate", f"{where}.name", "", name))
                seen.add(name)
            if not container.get("image"):
                errors.append(required(f"{where}.image"))
    return errors


def _template_errors(plural: str, spec: dict[str, Any], path: str) -> list[FieldError]:
    template = spec.get("template")
    if not isinstance(template, dict):
        return [required(f"{path}.template")]
    errors = _containers(template.get("spec"), f"{path}.template.spec")
    labels = (template.get("metadata") or {}).get("labels") or {}
    if plural in _WORKLOADS:
        selector = spec.get("selector")
        expressions = (selector.get("matchExpressions") or []) if isinstance(selector, dict) else []
        operators = [expression.get("operator") if isinstance(expression, dict) else None
                     for expression in expressions]
        unsupported = [not_supported(f"{path}.selector.matchExpressions[{index}].operator", operator,
                                     list(SELECTOR_OPERATORS))
                       for index, operator in enumerate(operators) if operator not in SELECTOR_OPERATORS]
        if unsupported:
            errors += unsupported
        elif isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
            errors.append(invalid(f"{path}.selector", selector, "empty selector is invalid for deployment"))
        elif isinstance(selector, dict) and not match_labels(selector, labels):
            errors.append(invalid(f"{path}.template.metadata.labels", labels,
                                  "`selector` does not match template `labels`"))
    if plural in ("jobs", "cronjobs"):
        restart = (template.get("spec") or {}).get("restartPolicy")
        if restart not in ("OnFailure", "Never"):
            errors.append(not_supported(f"{path}.template.spec.restartPolicy", restart, ["OnFailure", "Never"]))
    return errors


def _pod_update_errors(obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    def frozen(spec: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in spec.items() if k not in _POD_MUTABLE}
        for field in ("containers", "initContainers"):
            kept[field] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get(field) or []]
        return kept

    if frozen(obj.get("spec") or {}) != frozen(old.get("spec") or {}):
        return [forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image`,"
                                  "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                                  "`spec.tolerations` (only additions to existing tolerations),"
                                  "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                                  "previously negative)")]
    return []


def _network_policy_errors(spec: dict[str, Any]) -> list[FieldError]:
    """What the apiserver refuses in a NetworkPolicy: unknown policy types or protocols, a malformed CIDR, an
    ``except`` outside its CIDR, and an ``ipBlock`` peer that also names selectors."""
    errors = [not_supported(f"spec.policyTypes[{index}]", kind, ["Ingress", "Egress"])
              for index, kind in enumerate(spec.get("policyTypes") or []) if kind not in ("Ingress", "Egress")]
    for direction, peers_field in (("ingress", "from"), ("egress", "to")):
        for index, rule in enumerate(spec.get(direction) or []):
            if not isinstance(rule, dict):
                continue
            where = f"spec.{direction}[{index}]"
            for number, port in enumerate(rule.get("ports") or []):
                protocol = port.get("protocol") if isinstance(port, dict) else None
                if protocol not in ("TCP", "UDP", "SCTP"):
                    errors.append(not_supported(f"{where}.ports[{number}].protocol", protocol, ["SCTP", "TCP", "UDP"]))
            for number, peer in enumerate(rule.get(peers_field) or []):
                block = peer.get("ipBlock") if isinstance(peer, dict) else None
                if not isinstance(block, dict):
                    continue
                path = f"{where}.{peers_field}[{number}]"
                if peer.get("podSelector") is not None or peer.get("namespaceSelector") is not None:
                    errors.append(forbidden(path, "may not specify both ipBlock and another peer"))
                errors += _ip_block_errors(block, f"{path}.ipBlock")
    return errors


def _ip_block_errors(block: dict[str, Any], path: str) -> list[FieldError]:
    try:
        network = ipaddress.ip_network(str(block.get("cidr")), strict=False)
    except ValueError:
        return [invalid(f"{path}.cidr", block.get("cidr"), "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                                                           "2001:db8::/64)")]
    errors: list[FieldError] = []
    for index, excepted in enumerate(block.get("except") or []):
        try:
            inside = ipaddress.ip_network(str(excepted), strict=False)
        except ValueError:
            errors.append(invalid(f"{path}.except[{index}]", excepted, "must be a valid CIDR value, (e.g. "
                                                                      "10.9.8.0/24 or 2001:db8::/64)"))
            continue
        within = inside.network_address in network and inside.broadcast_address in network  # False across versions
        if inside == network or not within:
            errors.append(invalid(f"{path}.except[{index}]", excepted, "must be a strict subset of `cidr`"))
    return errors


def _semantic_errors(plural: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = obj.get("spec")
    if plural == "pods":
        return _containers(spec, "spec") + (_pod_update_errors(obj, old) if old else [])
    if not isinstance(spec, dict):
        return []
    if plural == "networkpolicies":
        return _network_policy_errors(spec)
    errors: list[FieldError] = []
    if plural in (*_WORKLOADS, "jobs"):
        errors += _template_errors(plural, spec, "spec")
    if plural == "cronjobs":
        job_spec = (spec.get("jobTemplate") or {}).get("spec")
        errors += _template_errors(plural, job_spec, "spec.jobTemplate.spec") if isinstance(job_spec, dict) else []
        if not spec.get("schedule"):
            errors.append(required("spec.schedule"))
    for field in ("replicas", "parallelism", "completions", "backoffLimit"):
        if isinstance(spec.get(field), int) and spec[field] < 0:
            errors.append(invalid(f"spec.{field}", spec[field], "must be greater than or equal to 0"))
    if plural == "services":
        service_type = spec.get("type")
        if service_type not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
            errors.append(not_supported("spec.type", service_type,
                                        ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]))
        elif service_type != "ExternalName" and spec.get("clusterIP") != "None" and not spec.get("ports"):
            errors.append(required("spec.ports"))
        for index, port in enumerate(spec.get("ports") or []):
            node_port = port.get("nodePort") if isinstance(port, dict) else None
            if isinstance(node_port, int) and node_port and not NODE_PORTS[0] <= node_port <= NODE_PORTS[1]:
                errors.append(invalid(f"spec.ports[{index}].nodePort", node_port,
                                      f"provided port is not in the valid range. The range of valid ports is "
                                      f"{NODE_PORTS[0]}-{NODE_PORTS[1]}"))
    return errors


def _schema_errors(resource_type: ResourceType, obj: dict[str, Any], version: str | None) -> list[FieldError]:
    errors = object_schema(model_schema("V1ObjectMeta")).errors(obj.get("metadata") or {}, "metadata")
    schema = _schema(resource_type, version)
    return errors + (object_schema(schema).errors(obj) if schema is not None else [])


def _raise(resource_type: ResourceType, obj: dict[str, Any], errors: list[FieldError]) -> None:
    unique = list({str(error): error for error in errors}.values())
    if unique:
        name = (obj.get("metadata") or {}).get("name") or ""
        raise invalid_object(resource_type.group, resource_type.kind, name, unique)


def check_types(resource_type: ResourceType, obj: dict[str, Any], version: str | None = None) -> None:
    """Raise 422 for values of the wrong JSON type — what the apiserver's decoder refuses before defaulting."""
    _raise(resource_type, obj, [e for e in _schema_errors(resource_type, obj, version) if e.type == "TypeInvalid"])


def _rule_errors(schema: dict[str, Any] | None, obj: dict[str, Any], old: dict[str, Any] | None,
                 found: list[FieldError]) -> list[FieldError]:
    """The CEL rules' errors; none are evaluated when a value has the wrong type (the apiserver's blocking error)."""
    if schema is None or celrules.rule_tree(schema) is None:
        return []
    if any(error.type == "TypeInvalid" for error in found):
        return [invalid("<nil>", "null", "some validation rules were not checked because the object was invalid; "
                                         "correct the existing errors to complete validation")]
    return celrules.errors(schema, obj, old)


def check(resource_type: ResourceType, obj: dict[str, Any], version: str | None = None,
          old: dict[str, Any] | None = None) -> None:
    """Raise 422 ``Invalid`` (every error at once) unless ``obj`` may be stored."""
    errors = meta.metadata_errors(obj.get("metadata") or {}, resource_type.name_rule)
    errors += _schema_errors(resource_type, obj, version)
    if not resource_type.custom:
        errors += _semantic_errors(resource_type.plural, obj, old)
    else:
        errors += _rule_errors(resource_type.schema(version), obj, old, errors)
    _raise(resource_type, obj, errors)
