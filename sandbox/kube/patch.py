"""The three patch formats of ``PATCH``: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge.

Strategic merge follows the apiserver for the lists the product patches: lists of containers, volumes,
env vars, ports, mounts, conditions … merge item by item on their merge key (``name``, ``mountPath``,
``containerPort``/``port``, ``type`` …), ``finalizers`` merge as a set, every other list is replaced;
``$patch: delete`` / ``$patch: replace`` and ``$deleteFromPrimitiveList`` work, other ``$`` directives are
ignored. Failures raise ``ApiError`` with the apiserver's codes (400 for an unreadable patch, 422 when it
cannot be applied).
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.kube.errors import ApiError, bad_request

MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON, MERGE, STRATEGIC, APPLY)

_MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "env": "name", "imagePullSecrets": "name", "resourceClaims": "name", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "hostAliases": "ip", "conditions": "type", "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey", "taints": "key", "ports": "port",
}
_SET_LISTS = frozenset({"finalizers"})


def unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message, {})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise unprocessable(f"invalid JSON pointer {path!r}: must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(document: Any, parts: list[str], path: str) -> tuple[Any, str]:
    node = document
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise unprocessable(f"jsonpatch: the path {path!r} does not exist")
    return node, parts[-1]


def _index(container: list, key: str, path: str, *, allow_end: bool) -> int:
    if key == "-" and allow_end:
        return len(container)
    if not key.isdigit() or int(key) > len(container) - (0 if allow_end else 1):
        raise unprocessable(f"jsonpatch: index {key!r} out of bounds in {path!r}")
    return int(key)


def _get(document: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return document
    container, key = _parent(document, parts, path)
    if isinstance(container, dict) and key in container:
        return container[key]
    if isinstance(container, list):
        return container[_index(container, key, path, allow_end=False)]
    raise unprocessable(f"jsonpatch: the path {path!r} does not exist")


def _remove(document: Any, path: str) -> Any:
    container, key = _parent(document, _pointer(path), path)
    if isinstance(container, dict) and key in container:
        return container.pop(key)
    if isinstance(container, list):
        return container.pop(_index(container, key, path, allow_end=False))
    raise unprocessable(f"jsonpatch: unable to remove nonexistent key {key!r} at {path!r}")


def _add(document: Any, path: str, value: Any, *, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    container, key = _parent(document, parts, path)
    if isinstance(container, dict):
        if replace and key not in container:
            raise unprocessable(f"jsonpatch: replace operation does not apply: doc is missing key {path!r}")
        container[key] = value
    elif isinstance(container, list):
        index = _index(container, key, path, allow_end=not replace)
        if replace:
            container[index] = value
        else:
            container.insert(index, value)
    else:
        raise unprocessable(f"jsonpatch: the path {path!r} does not exist")
    return document


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a copy of ``target``."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    document = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "path" not in operation:
            raise bad_request(f"invalid JSON patch operation: {operation!r}")
        op, path = operation.get("op"), operation["path"]
        if op in ("add", "replace", "test") and "value" not in operation:
            raise unprocessable(f"jsonpatch: {op} operation on {path!r} is missing a value")
        if op == "add":
            document = _add(document, path, copy.deepcopy(operation["value"]))
        elif op == "replace":
            document = _add(document, path, copy.deepcopy(operation["value"]), replace=True)
        elif op == "remove":
            _remove(document, path)
        elif op in ("move", "copy"):
            source = operation.get("from", "")
            value = _remove(document, source) if op == "move" else copy.deepcopy(_get(document, source))
            document = _add(document, path, value)
        elif op == "test":
            if _get(document, path) != operation["value"]:
                raise unprocessable(f"jsonpatch: testing value {path!r} failed")
        else:
            raise bad_request(f"Unexpected kind: {op}")
    return document


def _merge_key(field: str, items: list[Any]) -> str | None:
    key = _MERGE_KEYS.get(field)
    if field == "ports" and any(isinstance(item, dict) and "containerPort" in item for item in items):
        return "containerPort"
    return key


def _strategic_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    if field in _SET_LISTS:
        return [*original, *[item for item in patch if item not in original]]
    key = _merge_key(field, [*original, *patch])
    if key is None or any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [strategic_merge({}, item) if isinstance(item, dict) else item
                for item in patch if not (isinstance(item, dict) and "$patch" in item and len(item) == 1)]
    result = copy.deepcopy(original)
    for item in patch:
        if not isinstance(item, dict):
            continue
        position = next((i for i, old in enumerate(result) if isinstance(old, dict) and old.get(key) == item.get(key)),
                        None)
        if item.get("$patch") == "delete":
            if position is not None:
                result.pop(position)
        elif position is None:
            result.append(strategic_merge({}, item))
        else:
            result[position] = strategic_merge(result[position], item)
    return result


def strategic_merge(target: Any, patch: Any) -> Any:
    """Strategic merge patch (see the module docstring for the subset implemented)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [item for item in result.get(field) or [] if item not in value]
        elif key.startswith("$"):
            continue
        elif value is None or (isinstance(value, dict) and value.get("$patch") == "delete"):
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _strategic_list(key, result[key], value)
        elif isinstance(value, list):
            result[key] = _strategic_list(key, [], value)
        else:
            result[key] = strategic_merge(result.get(key), value)
    return result


def apply(target: dict[str, Any], patch: Any, patch_type: str, *, custom: bool) -> dict[str, Any]:
    """``target`` patched with ``patch`` of media type ``patch_type`` (strategic merge only for built-ins)."""
    if patch_type == JSON:
        patched = json_patch(target, patch)
    elif not isinstance(patch, dict):
        raise bad_request("the patch is not a JSON object")
    elif patch_type == MERGE or (patch_type == APPLY and custom):
        patched = merge_patch(target, patch)
    else:
        patched = strategic_merge(target, patch)
    if not isinstance(patched, dict):
        raise unprocessable("the patched object is not a JSON object")
    return patched
