"""Object metadata rules shared by every kind: timestamps, uids, generated names, name and label validation.

Names and label messages copy the apiserver's wording so a product test that asserts on a 422 cause reads
the same text it would get from EKS.
"""

from __future__ import annotations

import datetime
import random
import re
import uuid
from typing import Any

from sandbox import clock
from sandbox.kube.errors import FieldError, invalid, required

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

_NAME_RULES: dict[str, tuple[str, int, str]] = {
    "subdomain": (_DNS1123_SUBDOMAIN, 253,
                  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                  "validation is '" + _DNS1123_SUBDOMAIN + "')"),
    "label": (_DNS1123_LABEL, 63,
              "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
              "validation is '" + _DNS1123_LABEL + "')"),
    "dns1035": (_DNS1035_LABEL, 63,
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                "regex used for validation is '" + _DNS1035_LABEL + "')"),
}

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rfc3339(seconds: float | None = None) -> str:
    """``2026-01-02T03:04:05Z``: how metadata timestamps look (whole seconds, UTC)."""
    moment = datetime.datetime.fromtimestamp(clock.now() if seconds is None else seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_nano(micros: int) -> str:
    """``2026-01-02T03:04:05.123456000Z`` for a time in microseconds: how ``timestamps=true`` prefixes log lines."""
    moment = datetime.datetime.fromtimestamp(micros // 1_000_000, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{micros % 1_000_000:06d}000Z"


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch; raises ``ValueError`` for anything that is not RFC 3339."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", text):
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    whole, _, rest = text.partition(".")
    fraction = ""
    if rest:
        match = re.match(r"\d+", rest)
        assert match is not None  # the fullmatch above requires digits after the dot
        digits = match.group()
        fraction, text = digits[:6], whole + rest[len(digits):]
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment.timestamp() + (int(fraction.ljust(6, "0")) / 1e6 if fraction else 0.0)


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    """``generateName`` + five random characters, truncated like the apiserver's name generator."""
    return prefix[:58] + "".join(random.choices(_SUFFIX_ALPHABET, k=5))


def name_errors(name: str, rule: str, path: str = "metadata.name") -> list[FieldError]:
    """Errors for ``name`` under ``rule`` (``subdomain``, ``label``, ``dns1035`` or ``segment``)."""
    if rule == "segment":
        if name in (".", "..") or "/" in name or "%" in name:
            return [invalid(path, name, "may not contain '/' or '%' and may not be '.' or '..'")]
        return []
    pattern, limit, message = _NAME_RULES[rule]
    errors = []
    if len(name) > limit:
        errors.append(invalid(path, name, f"must be no more than {limit} characters"))
    if not re.fullmatch(pattern, name):
        errors.append(invalid(path, name, message))
    return errors


def _qualified_name_errors(key: str, path: str) -> list[FieldError]:
    prefix, _, name = key.rpartition("/")
    errors = []
    if prefix and name_errors(prefix, "subdomain", path):
        errors.append(invalid(path, key, "prefix part " + _NAME_RULES["subdomain"][2]))
    if not name or len(name) > 63 or not re.fullmatch(_QUALIFIED_NAME, name):
        errors.append(invalid(path, key, "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                                         "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                                         "'my.name',  or '123-abc', regex used for validation is '"
                                         + _QUALIFIED_NAME + "')"))
    return errors


def label_errors(labels: Any, path: str = "metadata.labels") -> list[FieldError]:
    if not isinstance(labels, dict):
        return []
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors += _qualified_name_errors(str(key), path)
        if not isinstance(value, str):
            continue
        if len(value) > 63:
            errors.append(invalid(path, value, "must be no more than 63 characters"))
        if not re.fullmatch(_LABEL_VALUE, value):
            errors.append(invalid(path, value, "a valid label must be an empty string or consist of alphanumeric "
                                               "characters, '-', '_' or '.', and must start and end with an "
                                               "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                                               "'12345', regex used for validation is '" + _LABEL_VALUE + "')"))
    return errors


def metadata_errors(metadata: dict[str, Any], name_rule: str) -> list[FieldError]:
    """Name (or generateName), labels and annotation keys of an object about to be stored."""
    errors: list[FieldError] = []
    name = metadata.get("name")
    if not name:
        errors.append(required("metadata.name", "name or generateName is required"))
    else:
        errors += name_errors(name, name_rule)
    errors += label_errors(metadata.get("labels"))
    for key in metadata.get("annotations") or {}:
        errors += _qualified_name_errors(str(key), "metadata.annotations")
    return errors
