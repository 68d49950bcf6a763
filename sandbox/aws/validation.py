"""Server-side input validation from the botocore model, with AWS's messages.

boto3 checks types, required members and minimums before sending, but not enums, maximums or patterns, and a
client may turn its own validation off. AWS answers such input with::

    1 validation error detected: Value 'ml.x' at 'instanceGroups.1.member.instanceType' failed to satisfy
    constraint: Member must satisfy enum value set: [ml.p4d.24xlarge, ...]

``check`` produces exactly that message (member names with a lower-case first letter, list positions from 1)
for every constraint of the input shape: required, enum, length and value ranges, and the (fully matched)
pattern.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from moto.core.model import Shape

from sandbox.aws.core import ApiError


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _path(parent: str, name: str) -> str:
    name = name[:1].lower() + name[1:]
    return f"{parent}.{name}" if parent else name


def _range(shape: Shape, value: Any, size: float, what: str, path: str, errors: list[str]) -> None:
    minimum, maximum = shape.metadata.get("min"), shape.metadata.get("max")
    where = f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: Member must have {what}"
    if minimum is not None and size < minimum:
        errors.append(f"{where} greater than or equal to {minimum}")
    if maximum is not None and size > maximum:
        errors.append(f"{where} less than or equal to {maximum}")


def _walk(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return
        for name in shape.required_members:
            if value.get(name) is None:
                errors.append(f"Value null at '{_path(path, name)}' failed to satisfy constraint: "
                              "Member must not be null")
        for name, member in shape.members.items():
            if value.get(name) is not None:
                _walk(member, value[name], _path(path, name), errors)
    elif kind == "list":
        if not isinstance(value, list):
            return
        _range(shape, value, len(value), "length", path, errors)
        for index, item in enumerate(value, start=1):
            if item is not None:
                _walk(shape.member, item, f"{path}.{index}.member", errors)
    elif kind == "map":
        if not isinstance(value, dict):
            return
        _range(shape, value, len(value), "length", path, errors)
        for key, item in value.items():
            _walk(shape.key, key, f"{path}.key", errors)
            if item is not None:
                _walk(shape.value, item, f"{path}.{key}", errors)
    elif kind == "string" and isinstance(value, str):
        _range(shape, value, len(value), "length", path, errors)
        enum = shape.enum
        if enum and value not in enum:
            errors.append(f"Value '{value}' at '{path}' failed to satisfy constraint: "
                          f"Member must satisfy enum value set: [{', '.join(enum)}]")
        pattern = shape.metadata.get("pattern")
        compiled = _pattern(pattern) if pattern else None
        if compiled is not None and not compiled.fullmatch(value):
            errors.append(f"Value '{value}' at '{path}' failed to satisfy constraint: "
                          f"Member must satisfy regular expression pattern: {pattern}")
    elif kind in ("integer", "long", "float", "double") and isinstance(value, int | float):
        _range(shape, value, value, "value", path, errors)


def errors_for(shape: Shape | None, params: dict[str, Any]) -> list[str]:
    """Every constraint ``params`` violates, as AWS phrases it."""
    errors: list[str] = []
    if shape is not None:
        _walk(shape, params, "", errors)
    return errors


def check(shape: Shape | None, params: dict[str, Any], code: str = "ValidationException") -> None:
    """Raise ``code`` with AWS's "N validation error(s) detected" message if ``params`` break ``shape``."""
    errors = errors_for(shape, params)
    if errors:
        noun = "error" if len(errors) == 1 else "errors"
        raise ApiError(code, f"{len(errors)} validation {noun} detected: " + "; ".join(errors))
