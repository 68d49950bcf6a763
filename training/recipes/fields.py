"""Recipe fields: what a submit form shows and how one submitted value is checked.

A :class:`Field` declares a name, a type, whether it is required, its default and (for the portal) help text and
bounds. :func:`clean` turns one submitted value into its normalized Python value or raises :class:`FieldProblem`
with a stable code. Types:

``string``/``text``  a string (``string`` is stripped; an empty one counts as missing)
``integer``          a JSON integer within ``min``/``max`` — codes ``invalid_type`` (a string such as ``"2"``, a
                     boolean, a list or an object), ``invalid`` (a fraction), ``min_value``, ``max_value``
``boolean``          ``true``/``false`` (also the strings) — code ``invalid``
``choice``           one of ``choices`` — code ``choice_code`` (``invalid_choice`` unless the field names another)
``path``             a string; resolved against the shared bucket later (``training.recipes.paths``)
``yaml``             YAML text that parses to a mapping — code ``invalid_yaml``; the cleaned value is the text
``list``             a list of strings, or one string split like a shell would — code ``invalid``
``map``              an object of environment-variable names to scalar values — code ``invalid_env``
``annotations``      an object of Kubernetes annotation keys (``[prefix/]name``) to strings — code
                     ``invalid_annotation``

Missing means absent, ``None`` or an empty string; a missing required field is ``required``, a missing optional
one takes ``default`` (``None`` when the default depends on the cluster, e.g. the instance type's GPU count).
"""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import dataclass
from typing import Any

import yaml

FIELD_TYPES = ("string", "integer", "boolean", "choice", "path", "yaml", "text", "list", "map", "annotations")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: A qualified name as the apiserver checks annotation keys: an optional DNS-1123 subdomain prefix and ``/``, then
#: 1-63 alphanumerics, ``-``, ``_`` or ``.``, starting and ending alphanumeric.
ANNOTATION_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                            r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class FieldProblem(Exception):
    """One field's value is not acceptable: ``code`` (stable) and a message for people."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()
    help: str = ""
    min: int | None = None
    max: int | None = None
    #: The code of a value outside ``choices`` (``unknown_command_type`` for MS-Swift's command type).
    choice_code: str = "invalid_choice"

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"field {self.name}: unknown type {self.type}")

    def payload(self) -> dict[str, Any]:
        """The JSON-ready description the REST catalog, the MCP tool and the portal form show."""
        return {"name": self.name, "type": self.type, "required": self.required, "default": self.default,
                "choices": list(self.choices), "help": self.help, "min": self.min, "max": self.max}


def missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def parse_yaml_mapping(text: str) -> dict[str, Any]:
    """``text`` parsed as YAML, which must be a mapping; raises ``FieldProblem('invalid_yaml')``."""
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise FieldProblem("invalid_yaml", f"The YAML does not parse{where}: "
                                           f"{getattr(error, 'problem', None) or error}.") from error
    if not isinstance(parsed, dict):
        raise FieldProblem("invalid_yaml", "The YAML must be a mapping of settings (key: value lines).")
    return parsed


def _integer(field: Field, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldProblem("invalid_type", f"{field.name} must be a whole number, not {type(value).__name__} "
                                           f"{value!r}.")
    if isinstance(value, float):
        raise FieldProblem("invalid", f"{field.name} must be a whole number, not {value!r}.")
    number = value
    if field.min is not None and number < field.min:
        raise FieldProblem("min_value", f"{field.name} must be at least {field.min}; got {number}.")
    if field.max is not None and number > field.max:
        raise FieldProblem("max_value", f"{field.name} must be at most {field.max}; got {number}.")
    return number


def _boolean(field: Field, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise FieldProblem("invalid", f"{field.name} must be true or false.")


def _list(field: Field, value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as error:
            raise FieldProblem("invalid", f"{field.name} does not split into words: {error}.") from None
    if isinstance(value, list | tuple) and all(isinstance(item, str | int | float) and not isinstance(item, bool)
                                               for item in value):
        return [str(item) for item in value]
    raise FieldProblem("invalid", f"{field.name} must be a list of strings.")


def _map(field: Field, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise FieldProblem("invalid_env", f"{field.name} must be an object of NAME: value pairs.")
    cleaned: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not ENV_NAME.match(key):
            raise FieldProblem("invalid_env", f"{key!r} is not an environment variable name (letters, digits, "
                                              "underscores; not starting with a digit).")
        if isinstance(item, dict | list) or item is None:
            raise FieldProblem("invalid_env", f"The value of {key} must be a string, number or boolean.")
        cleaned[key] = str(item).lower() if isinstance(item, bool) else str(item)
    return cleaned


def _annotations(field: Field, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise FieldProblem("invalid_annotation", f"{field.name} must be an object of key: value pairs.")
    for key, item in value.items():
        if not isinstance(key, str) or len(key) > 316 or not ANNOTATION_KEY.match(key):
            raise FieldProblem("invalid_annotation", f"{key!r} is not a Kubernetes annotation key "
                                                     "([prefix/]name, e.g. example.com/team).")
        if not isinstance(item, str):
            raise FieldProblem("invalid_annotation", f"The value of {key} must be a string.")
    return dict(value)


def clean(field: Field, value: Any) -> Any:
    """The normalized value of ``field`` (its default when missing); raises :class:`FieldProblem`."""
    if missing(value) and field.type not in ("map", "annotations"):
        if field.required:
            raise FieldProblem("required", f"{field.name} is required.")
        return copy.deepcopy(field.default)
    if field.type == "map":
        return _map(field, {} if value is None else value)
    if field.type == "annotations":
        return _annotations(field, {} if value is None else value)
    if field.type in ("string", "text", "path", "yaml", "choice"):
        if not isinstance(value, str):
            raise FieldProblem("invalid", f"{field.name} must be a string.")
        text = value if field.type in ("text", "yaml") else value.strip()
        if field.type == "yaml":
            parse_yaml_mapping(text)
        if field.type == "choice" and text not in field.choices:
            raise FieldProblem(field.choice_code, f"{field.name} must be one of {', '.join(field.choices)}; "
                                                  f"got {text!r}.")
        return text
    if field.type == "integer":
        return _integer(field, value)
    if field.type == "boolean":
        return _boolean(field, value)
    return _list(field, value)
