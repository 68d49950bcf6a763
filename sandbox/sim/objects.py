"""Small pieces every controller uses to read and write Kubernetes objects the way a controller does.

All functions take and return plain JSON dicts (the store's object form). Nothing here holds state.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox.kube import meta

#: Annotations that steer the simulator (see docs/sandbox.md).
OUTCOME = "sandbox.instantstart.dev/outcome"
STEPS = "sandbox.instantstart.dev/steps"
DURATION = "sandbox.instantstart.dev/duration-seconds"
STEP_SECONDS = "sandbox.instantstart.dev/step-seconds"
LINES_PER_STEP = "sandbox.instantstart.dev/lines-per-step"


def name(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def namespace(obj: dict[str, Any]) -> str | None:
    return obj["metadata"].get("namespace")


def own_namespace(obj: dict[str, Any]) -> str:
    """The namespace of an object of a namespaced kind (a pod, a service…): always set."""
    return str(obj["metadata"]["namespace"])


def uid(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["uid"])


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def annotation(obj: dict[str, Any], key: str, default: str = "") -> str:
    return str((obj["metadata"].get("annotations") or {}).get(key, default))


def int_annotation(obj: dict[str, Any], key: str, default: int) -> int:
    """A non-negative integer annotation, or ``default`` when it is missing or not a number."""
    value = annotation(obj, key)
    return int(value) if value.isdigit() else default


def float_annotation(obj: dict[str, Any], key: str, default: float) -> float:
    """A finite non-negative number annotation, or ``default`` when it is missing or not such a number."""
    try:
        value = float(annotation(obj, key))
    except ValueError:
        return default
    return value if 0 <= value < float("inf") else default


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    """The controller ``ownerReference`` pointing at ``owner`` (deleting the owner deletes the dependent)."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": name(owner), "uid": uid(owner),
            "controller": True, "blockOwnerDeletion": True}


def controller_uid(obj: dict[str, Any]) -> str | None:
    """The uid of the object's controlling owner, if it has one."""
    for reference in obj["metadata"].get("ownerReferences") or []:
        if reference.get("controller"):
            return str(reference.get("uid"))
    return None


def owned_by(objects: list[dict[str, Any]], owner: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects whose controlling owner is ``owner``."""
    owner_uid = uid(owner)
    return [obj for obj in objects if controller_uid(obj) == owner_uid]


def timestamp(seconds: float | None = None) -> str:
    """An RFC 3339 timestamp (whole seconds, UTC), as status fields carry them."""
    return meta.rfc3339(seconds)


def condition(conditions: list[dict[str, Any]] | None, kind: str, status: str, reason: str = "",
              message: str = "", **extra: Any) -> list[dict[str, Any]]:
    """``conditions`` with the condition of type ``kind`` set; ``lastTransitionTime`` only moves when the
    status does, as controllers do. Other conditions keep their order; a new one is appended."""
    result = [dict(entry) for entry in conditions or []]
    for entry in result:
        if entry.get("type") == kind:
            if entry.get("status") != status:
                entry["lastTransitionTime"] = timestamp()
            entry.update(status=status, reason=reason, message=message, **extra)
            return result
    result.append({"type": kind, "status": status, "reason": reason, "message": message,
                   "lastTransitionTime": timestamp(), **extra})
    return result


def condition_status(obj: dict[str, Any], kind: str) -> str | None:
    """``True``/``False``/``Unknown`` for the condition of type ``kind`` in ``status.conditions``."""
    for entry in (obj.get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return str(entry.get("status"))
    return None


def template_hash(template: Any) -> str:
    """A short stable hash of a pod template (what ``pod-template-hash`` and revisions are made of)."""
    digest = hashlib.sha256(repr(_canonical(template)).encode()).hexdigest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    number = int(digest[:16], 16)
    return "".join(alphabet[(number >> (5 * i)) % len(alphabet)] for i in range(10))


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, list):
        return tuple(_canonical(item) for item in value)
    return value
