"""URL grammar of a virtual API server, after its ``/clusters/<region>/<cluster>`` prefix.

Discovery paths map to a ``Discovery`` target; resource paths (``/api/v1/...`` and
``/apis/<group>/<version>/...``, optionally with the legacy ``watch/`` segment) map to a
``ResourcePath``: ``[namespaces/<ns>/]<plural>[/<name>[/<subresource>]]``. ``/api/v1/namespaces/<name>``
and its ``status``/``finalize`` subresources are the Namespace object itself.
"""

from __future__ import annotations

from dataclasses import dataclass

_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class Discovery:
    """``what`` is one of: root, version, health, api, apis, group, resources."""

    what: str
    group: str = ""
    version: str = ""


@dataclass(frozen=True)
class ResourcePath:
    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    legacy_watch: bool = False

    @property
    def item(self) -> str:
        """The name an item route addresses (every item route has one)."""
        if self.name is None:
            raise ValueError(f"{self.plural}: a collection route has no item name")
        return self.name


def _resource(group: str, version: str, parts: list[str]) -> ResourcePath | None:
    watch = bool(parts) and parts[0] == "watch"
    if watch:
        parts = parts[1:]
    namespace = None
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, parts = parts[1], parts[2:]
    if not parts or len(parts) > 3 or any(not part for part in parts):
        return None
    return ResourcePath(group=group, version=version, plural=parts[0], namespace=namespace,
                        name=parts[1] if len(parts) > 1 else None, subresource=parts[2] if len(parts) > 2 else None,
                        legacy_watch=watch)


def parse(path: str) -> Discovery | ResourcePath | None:
    """The target of ``path`` (relative to the cluster prefix), or ``None`` for an unknown path."""
    parts = [part for part in path.strip("/").split("/")] if path.strip("/") else []
    if not parts:
        return Discovery("root")
    head = parts[0]
    if len(parts) == 1 and head == "version":
        return Discovery("version")
    if len(parts) == 1 and head in ("healthz", "livez", "readyz"):
        return Discovery("health")
    if head == "api":
        if len(parts) == 1:
            return Discovery("api")
        if parts[1] != "v1":
            return None
        return Discovery("resources", "", "v1") if len(parts) == 2 else _resource("", "v1", parts[2:])
    if head == "apis":
        if len(parts) == 1:
            return Discovery("apis")
        if len(parts) == 2:
            return Discovery("group", parts[1])
        if len(parts) == 3:
            return Discovery("resources", parts[1], parts[2])
        return _resource(parts[1], parts[2], parts[3:])
    return None
