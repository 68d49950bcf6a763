"""A recipe's submit form: the HTML inputs generated from its catalog fields and the ``config`` object read back.

Every recipe field (``training.recipes.catalog_payload``) becomes one input named ``cfg-<field>`` — prefixed because
a recipe field may be called ``config`` or ``name`` like the submission's own keys. HTML carries strings, so
:func:`config_from_post` turns them into what a REST client would send and leaves checking to the recipe fields
(``training.recipes.fields.clean``), reached through the same serializer and service as REST:

- an empty input is left out (the field's default, or its ``required`` error, applies);
- a boolean is a checkbox: always sent, checked or not (so a default of ``true`` can be turned off);
- an integer field's text is sent as a number when it spells one (ASCII digits, an optional sign), else as typed,
  so it fails with the field's own code (``invalid_type``);
- lists (one line, split like a shell) and the rest are sent as typed;
- a ``map`` (environment variables) or ``annotations`` field is a textarea of ``key=value`` lines; a line without
  ``=`` is sent as a key, so it fails with the field's own code (``invalid_env``, ``invalid_annotation``).
"""

from __future__ import annotations

import re
from typing import Any

from django.http import QueryDict

PREFIX = "cfg-"
_WHOLE = re.compile(r"[+-]?[0-9]{1,18}")
#: Fields the form lays out in its own sections (compute / storage / run policy); the rest are the recipe's own.
COMPUTE = ("instance_group", "replicas", "gpus_per_node", "efa_per_node", "processes_per_node", "image")
STORAGE = ("checkpoints", "env", "annotations")
#: Types entered as ``key=value`` lines.
PAIRS = ("map", "annotations")
POLICY = ("elastic", "min_replicas", "max_replicas", "checkpointless", "max_retries",
          "restarts_before_full_job_restart", "eval_period_seconds", "max_full_job_restarts", "hang_detection",
          "start_pattern", "start_timeout_seconds", "progress_pattern", "progress_timeout_seconds", "min_throughput")


#: Words of field names written as people write them in a label (``gpus_per_node`` → "GPUs per node").
_WORDS = {"gpus": "GPUs", "gpu": "GPU", "efa": "EFA", "id": "ID", "url": "URL", "env": "Environment variables",
          "lr": "learning rate", "hf": "Hugging Face", "mlflow": "MLflow", "s3": "S3", "nvme": "NVMe"}
#: Labels that say more than the name's words.
LABELS = {"efa_per_node": "EFA interfaces per node", "image": "Container image", "working_dir": "Working directory",
          "config_path": "Config file", "restarts_before_full_job_restart": "Process restarts before a full restart",
          "eval_period_seconds": "Restart budget period (seconds)", "min_throughput": "Minimum throughput"}


def label(name: str) -> str:
    """The label a person reads for the recipe field ``name`` (the name itself stays the key REST and MCP use)."""
    if name in LABELS:
        return LABELS[name]
    words = [_WORDS.get(word, word) for word in name.split("_")]
    first = words[0]
    return " ".join([first[:1].upper() + first[1:], *words[1:]])


def _shown(value: Any) -> str:
    """A default or submitted value as the text an input shows."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return " ".join(str(item) for item in value)
    if isinstance(value, dict):
        return "\n".join(f"{key}={item}" for key, item in value.items())
    return str(value)


def field_rows(fields: list[dict[str, Any]], values: dict[str, Any], errors: dict[str, list]) -> dict[str, list]:
    """The recipe's fields as template rows grouped ``{"recipe", "compute", "storage", "policy"}``; each row is
    the catalog field plus ``input`` (its form name), ``label`` (:func:`label`), ``value`` (what the input shows: the
    user's input after an error, else the default), ``checked`` for booleans and ``errors``."""
    groups: dict[str, list] = {"recipe": [], "compute": [], "storage": [], "policy": []}
    for field in fields:
        name = field["name"]
        key = PREFIX + name
        submitted = key in values or (field["type"] == "boolean" and values.get("_submitted"))
        value = values.get(key, "") if submitted else _shown(field["default"])
        checked = (value in ("on", "true")) if field["type"] == "boolean" else False
        row = {**field, "input": key, "label": label(name), "value": value, "checked": checked,
               "errors": errors.get(name, [])}
        group = ("compute" if name in COMPUTE else "storage" if name in STORAGE else "policy" if name in POLICY
                 else "recipe")
        groups[group].append(row)
    return groups


def _pairs(text: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition("=")
        pairs[key.strip() if sep else line.strip()] = value.strip() if sep else ""
    return pairs


def config_from_post(fields: list[dict[str, Any]], data: QueryDict) -> dict[str, Any]:
    """The ``config`` object of a submission from the posted form (see the module docstring)."""
    config: dict[str, Any] = {}
    for field in fields:
        key, kind = PREFIX + field["name"], field["type"]
        if kind == "boolean":
            config[field["name"]] = data.get(key) in ("on", "true")
            continue
        raw = data.get(key, "")
        if not raw.strip():
            continue
        if kind == "integer" and _WHOLE.fullmatch(raw.strip()):
            config[field["name"]] = int(raw)
        else:
            config[field["name"]] = _pairs(raw) if kind in PAIRS else raw
    return config


TOP_LEVEL = ("name", "cluster", "recipe", "priority")


def split_errors(fields: list[dict[str, Any]], error: dict[str, Any] | None) -> tuple[dict, dict, list]:
    """The error's field errors as ``(by recipe field, by top-level key, the rest)``: a recipe field's errors
    (``config.<name>`` counts as ``<name>``) go next to its input, ``name``/``cluster``/``recipe`` next to the
    submission's own inputs, and anything else is listed with the form's error."""
    if not error:
        return {}, {}, []
    names = {field["name"] for field in fields}
    placed: dict[str, list] = {}
    top: dict[str, list] = {}
    others: list = []
    for key, items in (error.get("fields") or {}).items():
        short = key.removeprefix("config.")
        if key in TOP_LEVEL:
            top.setdefault(key, []).extend(items)
        elif short in names:
            placed.setdefault(short, []).extend(items)
        else:
            others.extend({**item, "message": f"{key}: {item['message']}"} for item in items)
    return placed, top, others
