"""What a virtual API server serves: one ``ResourceType`` per (group, plural), built in or from a CRD.

A type knows how discovery describes it (kind, verbs, scope, short names, subresources), how it is
validated (a client model for built-ins, ``openAPIV3Schema`` per version for custom resources) and which
name rule its ``metadata.name`` follows. ``Registry`` resolves the many ways callers name a type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, eq=False)
class ResourceType:
    """One served resource. ``version`` is the storage (and preferred) version; ``versions`` all served ones."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    versions: tuple[str, ...] = ()
    singular: str = ""
    name_rule: str = "subdomain"
    model: str = ""
    schemas: Mapping[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    scale_paths: tuple[str, str, str] | None = None
    custom: bool = False

    def __post_init__(self) -> None:
        if not self.versions:
            object.__setattr__(self, "versions", (self.version,))
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())

    @property
    def key(self) -> tuple[str, str]:
        return self.group, self.plural

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def api_version(self, version: str | None = None) -> str:
        version = version or self.version
        return f"{self.group}/{version}" if self.group else version

    def has(self, subresource: str) -> bool:
        return subresource in self.subresources

    def schema(self, version: str | None = None) -> dict[str, Any] | None:
        return self.schemas.get(version or self.version)


def _version_rank(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority: GA before beta before alpha, higher numbers first, then the rest."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0, version)
    stability = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    return (stability, -int(match.group(1)), -int(match.group(3) or 0), version)


def sort_versions(versions: Iterable[str]) -> list[str]:
    return sorted(set(versions), key=_version_rank)


class Registry:
    """The types one API server serves. Not thread-safe on its own: the owning ``Store`` locks around it."""

    def __init__(self, types: Iterable[ResourceType] = ()):
        self._types: dict[tuple[str, str], ResourceType] = {}
        for resource_type in types:
            self.add(resource_type)

    def add(self, resource_type: ResourceType) -> None:
        self._types[resource_type.key] = resource_type

    def remove(self, key: tuple[str, str]) -> None:
        self._types.pop(key, None)

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    def get(self, key: tuple[str, str]) -> ResourceType | None:
        return self._types.get(key)

    def route(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/<group>/<version>/<plural>`` (``group`` empty for ``/api/v1``)."""
        resource_type = self._types.get((group, plural))
        return resource_type if resource_type and version in resource_type.versions else None

    def group_versions(self) -> dict[str, list[str]]:
        """Group → served versions, preferred first."""
        groups: dict[str, set[str]] = {}
        for resource_type in self._types.values():
            groups.setdefault(resource_type.group, set()).update(resource_type.versions)
        return {group: sort_versions(versions) for group, versions in groups.items()}

    def resolve(self, ref: str | ResourceType | tuple[str, ...]) -> ResourceType:
        """A type from a ``ResourceType``, a ``(group, version, plural-or-kind)`` tuple, or a name: kind,
        plural, singular or short name, optionally qualified with its group (``deployments.apps``,
        ``HyperPodPyTorchJob.sagemaker.amazonaws.com``) or written ``apps/v1/Deployment``.

        Raises ``LookupError`` when nothing or more than one type matches; the core group wins a tie."""
        if isinstance(ref, ResourceType):
            return ref
        if isinstance(ref, tuple):
            group, _version, name = ref
            return self._match(name, group)
        if ref.count("/") >= 1:
            *group_version, name = ref.split("/")
            return self._match(name, group_version[0] if len(group_version) == 2 else "")
        name, _, group = ref.partition(".")
        return self._match(name, group if group else None)

    def _match(self, name: str, group: str | None) -> ResourceType:
        lowered = name.lower()
        found = [t for t in self._types.values() if (group is None or t.group == group)
                 and (name == t.kind or lowered in (t.plural, t.singular) or lowered in t.short_names)]
        if len(found) > 1:
            core = [t for t in found if t.group == ""]
            found = core if len(core) == 1 else found
        if len(found) != 1:
            raise LookupError(f"{len(found)} resource types match {name!r}" + (f" in group {group!r}" if group else ""))
        return found[0]
