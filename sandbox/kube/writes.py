"""The write verbs of ``Store``: create, update (main resource or ``status``), patch, delete with garbage
collection, deletecollection, and the ``scale`` subresource.

Mixed into ``Store``, whose lock, buckets, event emission and admission (``_prepare``) they use. All
methods copy their input, raise ``ApiError`` exactly where the apiserver answers with an error, and with
``dry_run`` do everything except store.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
from typing import TYPE_CHECKING, Any

from sandbox.kube import customresources, defaults, meta
from sandbox.kube import patch as patches
from sandbox.kube.builtins import PROTECTED_NAMESPACES
from sandbox.kube.errors import (
    STALE,
    already_exists,
    bad_request,
    conflict,
    forbidden_request,
    invalid,
    invalid_object,
    not_found,
    required,
    unsupported_media_type,
)
from sandbox.kube.resources import ResourceType
from sandbox.kube.selectors import selector_string

if TYPE_CHECKING:
    from sandbox.kube.logs import LogBook
    from sandbox.kube.resources import Registry
    from sandbox.kube.store import Ref

_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation", "managedFields", "selfLink")
_KEPT_ON_UPDATE = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
#: Deleting a batch/v1 Job without a propagation policy orphans its pods, for backwards compatibility.
_ORPHAN_BY_DEFAULT = frozenset({"jobs"})


def _path_get(obj: dict[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _path_set(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.strip(".").split(".")
    for part in parents:
        obj = obj.setdefault(part, {})
    obj[last] = value


def _desired_state(resource_type: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """What ``metadata.generation`` tracks: everything but metadata (and status, when it is a subresource)."""
    skipped = {"metadata", "apiVersion", "kind"} | ({"status"} if resource_type.has("status") else set())
    return {key: value for key, value in obj.items() if key not in skipped}


class Writer:
    """Write verbs; see the module docstring. Expects the attributes ``Store`` provides."""

    if TYPE_CHECKING:  # what Store provides
        registry: Registry
        lock: contextlib.AbstractContextManager[Any]
        logs: LogBook
        _objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]]
        _rv: int

        def transaction(self) -> contextlib.AbstractContextManager[None]: ...
        def _next_rv(self) -> int: ...
        def _emit(self, kind: str, resource_type: ResourceType, obj: dict[str, Any],
                  old: dict[str, Any] | None) -> None: ...
        def resolve(self, ref: Ref) -> ResourceType: ...
        def _bucket(self, resource_type: ResourceType) -> dict[tuple[str, str], dict[str, Any]]: ...
        def _key(self, resource_type: ResourceType, name: str, namespace: str | None) -> tuple[str, str]: ...
        def _stored(self, resource_type: ResourceType, name: str, namespace: str | None) -> dict[str, Any]: ...
        def _after_create(self, resource_type: ResourceType, obj: dict[str, Any]) -> None: ...
        def _after_update(self, resource_type: ResourceType, obj: dict[str, Any]) -> None: ...
        def _prepare(self, resource_type: ResourceType, obj: dict[str, Any], version: str | None,
                     old: dict[str, Any] | None, strict: bool) -> list[str]: ...

    # -- shared steps -------------------------------------------------------------------------------------

    def _body(self, resource_type: ResourceType, obj: Any, version: str | None) -> tuple[dict[str, Any], str]:
        if not isinstance(obj, dict):
            raise bad_request(f"{resource_type.kind} in version \"{version or resource_type.version}\" cannot be "
                              "handled as a " + resource_type.kind + ": the body is not a JSON object")
        obj = copy.deepcopy(obj)
        declared = obj.get("apiVersion")
        version = version or resource_type.version
        if declared:
            group, _, declared_version = declared.rpartition("/")
            if group != resource_type.group or declared_version not in resource_type.versions:
                raise bad_request(f"the API version in the data ({declared}) does not match the expected API "
                                  f"version ({resource_type.api_version(version)})")
            version = declared_version
        if obj.get("kind") not in (None, "", resource_type.kind):
            raise bad_request(f"{obj['kind']} in version \"{version}\" cannot be handled as a {resource_type.kind}: "
                              "the kind in the data does not match the expected kind")
        obj["apiVersion"], obj["kind"] = resource_type.api_version(), resource_type.kind
        if not isinstance(obj.setdefault("metadata", {}), dict):
            raise bad_request("metadata must be an object")
        return obj, version

    def _namespace_of(self, resource_type: ResourceType, metadata: dict[str, Any], namespace: str | None) -> str:
        if not resource_type.namespaced:
            metadata.pop("namespace", None)
            return ""
        given = metadata.get("namespace")
        if namespace and given and given != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        metadata["namespace"] = namespace or given or "default"
        return metadata["namespace"]

    def _require_namespace(self, namespace: str) -> None:
        namespaces = self.registry.get(("", "namespaces"))
        assert namespaces is not None  # a built-in type
        if ("", namespace) not in self._bucket(namespaces):
            raise not_found("", "namespaces", namespace)

    # -- create -------------------------------------------------------------------------------------------

    def create(self, resource: Any, obj: dict[str, Any], namespace: str | None = None, *, version: str | None = None,
               dry_run: bool = False, strict: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
        """POST: store a new object (409 if the name is taken, 404 if its namespace does not exist)."""
        with self.transaction():
            resource_type = self.resolve(resource)
            obj, version = self._body(resource_type, obj, version)
            metadata = obj["metadata"]
            namespace = self._namespace_of(resource_type, metadata, namespace)
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = meta.generated_name(str(metadata["generateName"]))
            for field in _SERVER_FIELDS:
                metadata.pop(field, None)
            metadata["uid"] = meta.new_uid()
            if resource_type.namespaced:
                self._require_namespace(namespace)
            if resource_type.has("status") and resource_type.plural not in defaults.KEEP_STATUS_ON_CREATE:
                obj.pop("status", None)
            found = self._prepare(resource_type, obj, version, None, strict)
            status = defaults.initial_status(resource_type, obj)
            if status is not None and not obj.get("status"):
                obj["status"] = status
            if resource_type.plural == "customresourcedefinitions":
                obj["status"] = customresources.status(obj)
            key = (namespace, metadata["name"])
            if key in self._bucket(resource_type):
                raise already_exists(resource_type.group, resource_type.plural, metadata["name"])
            metadata["creationTimestamp"] = meta.rfc3339()
            if resource_type.custom or "spec" in obj:
                metadata["generation"] = 1
            if warnings is not None:
                warnings += found
            if dry_run:
                metadata["resourceVersion"] = str(self._rv)
                return copy.deepcopy(obj)
            metadata["resourceVersion"] = str(self._next_rv())
            self._bucket(resource_type)[key] = obj
            self._emit("ADDED", resource_type, obj, None)
            self._after_create(resource_type, obj)
            return copy.deepcopy(obj)

    # -- update and patch ---------------------------------------------------------------------------------

    def update(self, resource: Any, obj: dict[str, Any], namespace: str | None = None, *,
               subresource: str | None = None, version: str | None = None, dry_run: bool = False,
               strict: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
        """PUT: replace the object (or only its status with ``subresource="status"``).

        A ``metadata.resourceVersion`` in the body must be current (else 409 ``Conflict``)."""
        with self.transaction():
            resource_type = self.resolve(resource)
            obj, version = self._body(resource_type, obj, version)
            name = obj["metadata"].get("name")
            if not name:
                raise invalid_object(resource_type.group, resource_type.kind, "",
                                     [required("metadata.name", "name or generateName is required")])
            namespace = self._namespace_of(resource_type, obj["metadata"], namespace)
            old = self._stored(resource_type, name, namespace)
            return self._replace(resource_type, old, obj, version, subresource, dry_run, strict, warnings)

    def update_status(self, resource: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """PUT ``/status``: only ``status`` changes; spec and metadata changes in ``obj`` are ignored."""
        return self.update(resource, obj, namespace, subresource="status")

    def patch(self, resource: Any, name: str, body: Any, namespace: str | None = None, *,
              patch_type: str = patches.MERGE, subresource: str | None = None, version: str | None = None,
              dry_run: bool = False, strict: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
        """PATCH with a media type from ``patch.PATCH_TYPES`` (apply-patch creates a missing object)."""
        with self.transaction():
            resource_type = self.resolve(resource)
            if patch_type == patches.STRATEGIC and resource_type.custom:
                raise unsupported_media_type(patch_type, [patches.JSON, patches.MERGE, patches.APPLY])
            key = self._key(resource_type, name, namespace)
            old = self._bucket(resource_type).get(key)
            if old is None and patch_type == patches.APPLY and isinstance(body, dict) and subresource is None:
                created = copy.deepcopy(body)
                created.setdefault("metadata", {})["name"] = name
                return self.create(resource_type, created, namespace, version=version, dry_run=dry_run,
                                   strict=strict, warnings=warnings)
            if old is None:
                raise not_found(resource_type.group, resource_type.plural, name)
            patched = patches.apply(old, body, patch_type, custom=resource_type.custom)
            patched, version = self._body(resource_type, patched, version)
            if patched["metadata"].get("name") != name:
                raise bad_request(f"the name of the object ({patched['metadata'].get('name')}) does not match the "
                                  f"name on the URL ({name})")
            self._namespace_of(resource_type, patched["metadata"], old["metadata"].get("namespace"))
            return self._replace(resource_type, old, patched, version, subresource, dry_run, strict, warnings)

    def _replace(self, resource_type: ResourceType, old: dict[str, Any], new: dict[str, Any], version: str | None,
                 subresource: str | None, dry_run: bool, strict: bool, warnings: list[str] | None) -> dict[str, Any]:
        old_meta, new_meta = old["metadata"], new["metadata"]
        if new_meta.get("resourceVersion") not in (None, "", old_meta["resourceVersion"]):
            raise conflict(resource_type.group, resource_type.plural, old_meta["name"], STALE)
        if subresource == "status":
            candidate = copy.deepcopy(old)
            candidate["status"] = new.get("status")
            if candidate["status"] is None:
                del candidate["status"]
        else:
            candidate = new
            for field in _SERVER_FIELDS:
                new_meta.pop(field, None)
            new_meta.update({field: old_meta[field] for field in _KEPT_ON_UPDATE if field in old_meta})
            new_meta["resourceVersion"] = old_meta["resourceVersion"]
            if resource_type.has("status"):
                candidate.pop("status", None)
                if "status" in old:
                    candidate["status"] = copy.deepcopy(old["status"])
        found = self._prepare(resource_type, candidate, version, old, strict)
        if resource_type.plural == "customresourcedefinitions":
            candidate["status"] = customresources.status(candidate)
        if subresource != "status" and "generation" in old_meta and \
                _desired_state(resource_type, candidate) != _desired_state(resource_type, old):
            candidate["metadata"]["generation"] = old_meta["generation"] + 1
        if warnings is not None:
            warnings += found
        if candidate == old or dry_run:
            return copy.deepcopy(candidate)
        candidate["metadata"]["resourceVersion"] = str(self._next_rv())
        namespace = old_meta.get("namespace", "")
        self._bucket(resource_type)[(namespace, old_meta["name"])] = candidate
        self._emit("MODIFIED", resource_type, candidate, old)
        self._after_update(resource_type, candidate)
        if candidate["metadata"].get("deletionTimestamp") and not candidate["metadata"].get("finalizers"):
            return self._remove(resource_type, candidate, "Background")
        return copy.deepcopy(candidate)

    # -- delete -------------------------------------------------------------------------------------------

    def delete(self, resource: Any, name: str, namespace: str | None = None, *, propagation: str | None = None,
               preconditions: dict[str, str] | None = None, dry_run: bool = False) -> dict[str, Any]:
        """DELETE: remove the object and, unless ``propagation="Orphan"``, its dependents (objects whose
        ``ownerReferences`` point at it). An object with finalizers only gets ``deletionTimestamp``; it goes
        once an update empties ``metadata.finalizers``. Returns the object's last state."""
        with self.transaction():
            resource_type = self.resolve(resource)
            obj = self._stored(resource_type, name, namespace)
            for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                wanted = (preconditions or {}).get(field)
                if wanted and wanted != obj["metadata"].get(field):
                    raise conflict(resource_type.group, resource_type.plural, name,
                                   f"Precondition failed: {label} in precondition: {wanted}, {label} in object "
                                   f"meta: {obj['metadata'].get(field)}")
            if resource_type.plural == "namespaces" and name in PROTECTED_NAMESPACES:
                raise forbidden_request("", "namespaces", name, "this namespace may not be deleted")
            if dry_run:
                return copy.deepcopy(obj)
            policy = propagation or ("Orphan" if resource_type.plural in _ORPHAN_BY_DEFAULT else "Background")
            return self._delete_or_mark(resource_type, obj, policy)

    def _delete_or_mark(self, resource_type: ResourceType, obj: dict[str, Any], policy: str) -> dict[str, Any]:
        if not obj["metadata"].get("finalizers"):
            return self._remove(resource_type, obj, policy)
        if obj["metadata"].get("deletionTimestamp"):
            return copy.deepcopy(obj)
        marked = copy.deepcopy(obj)
        marked["metadata"].update(deletionTimestamp=meta.rfc3339(), deletionGracePeriodSeconds=0,
                                  resourceVersion=str(self._next_rv()))
        self._bucket(resource_type)[(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = marked
        self._emit("MODIFIED", resource_type, marked, obj)
        return copy.deepcopy(marked)

    def _remove(self, resource_type: ResourceType, obj: dict[str, Any], policy: str) -> dict[str, Any]:
        metadata = obj["metadata"]
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        self._bucket(resource_type).pop((namespace, name), None)
        final = copy.deepcopy(obj)
        final["metadata"]["resourceVersion"] = str(self._next_rv())
        if resource_type.plural == "namespaces":
            final["metadata"].setdefault("deletionTimestamp", meta.rfc3339())
            final.setdefault("status", {})["phase"] = "Terminating"
        self._emit("DELETED", resource_type, final, obj)
        if resource_type.plural == "pods":
            self.logs.forget(namespace, name)
        if resource_type.plural == "namespaces":
            for contained_type in self.registry.all():
                if contained_type.namespaced:
                    for key, contained in list(self._bucket(contained_type).items()):
                        if key[0] == name:
                            self._remove(contained_type, contained, "Background")
        if resource_type.plural == "customresourcedefinitions":
            served = self.registry.get((obj["spec"]["group"], obj["spec"]["names"]["plural"]))
            if served is not None:
                for custom in list(self._bucket(served).values()):
                    self._remove(served, custom, "Orphan")
                self._objects.pop(served.key, None)
                self.registry.remove(served.key)
        self._collect_dependents(metadata["uid"], policy)
        return final

    def _collect_dependents(self, owner_uid: str, policy: str) -> None:
        for dependent_type in self.registry.all():
            for dependent in list(self._bucket(dependent_type).values()):
                references = dependent["metadata"].get("ownerReferences") or []
                if not any(reference.get("uid") == owner_uid for reference in references):
                    continue
                remaining = [reference for reference in references if reference.get("uid") != owner_uid]
                if policy != "Orphan" and not remaining:
                    self._delete_or_mark(dependent_type, dependent, "Background")
                    continue
                updated = copy.deepcopy(dependent)
                updated["metadata"]["ownerReferences"] = remaining
                if not remaining:
                    del updated["metadata"]["ownerReferences"]
                updated["metadata"]["resourceVersion"] = str(self._next_rv())
                key = (dependent["metadata"].get("namespace", ""), dependent["metadata"]["name"])
                self._bucket(dependent_type)[key] = updated
                self._emit("MODIFIED", dependent_type, updated, dependent)

    def delete_collection(self, resource: Any, namespace: str | None = None, *, label_selector_text: str = "",
                          field_selector_text: str = "", propagation: str | None = None,
                          dry_run: bool = False) -> list[dict[str, Any]]:
        """DELETE on a collection: every matching object, as ``delete`` would."""
        with self.transaction():
            matching = self.list(resource, namespace, label_selector_text=label_selector_text,
                                 field_selector_text=field_selector_text)
            return [self.delete(resource, obj["metadata"]["name"], obj["metadata"].get("namespace"),
                                propagation=propagation, dry_run=dry_run) for obj in matching]

    # -- scale --------------------------------------------------------------------------------------------

    def _scale_paths(self, resource_type: ResourceType, name: str) -> tuple[str, str, str]:
        if not resource_type.has("scale"):
            raise not_found(resource_type.group, f"{resource_type.plural}/scale", name)
        return resource_type.scale_paths or (".spec.replicas", ".status.replicas", "")

    def scale(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        """GET ``/scale``: an ``autoscaling/v1`` Scale view of the object."""
        with self.lock:
            resource_type = self.resolve(resource)
            spec_path, status_path, selector_path = self._scale_paths(resource_type, name)
            obj = self._stored(resource_type, name, namespace)
            metadata = obj["metadata"]
            selector = (_path_get(obj, selector_path) if selector_path and resource_type.custom
                        else selector_string((obj.get("spec") or {}).get("selector")))
            scale_meta = {key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion",
                                                         "creationTimestamp") if key in metadata}
            return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": scale_meta,
                    "spec": {"replicas": _path_get(obj, spec_path) or 0},
                    "status": {"replicas": _path_get(obj, status_path) or 0, **({"selector": selector}
                                                                              if selector else {})}}

    def update_scale(self, resource: Any, name: str, scale: dict[str, Any], namespace: str | None = None, *,
                     dry_run: bool = False) -> dict[str, Any]:
        """PUT ``/scale``: set the replicas of the object from a Scale body (rv-checked when given)."""
        with self.transaction():
            resource_type = self.resolve(resource)
            spec_path, _, _ = self._scale_paths(resource_type, name)
            replicas = (scale.get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise invalid_object("autoscaling", "Scale", name, [
                    invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
            old = self._stored(resource_type, name, namespace)
            updated = copy.deepcopy(old)
            _path_set(updated, spec_path, replicas)
            updated["metadata"]["resourceVersion"] = (scale.get("metadata") or {}).get("resourceVersion") or \
                old["metadata"]["resourceVersion"]
            self._replace(resource_type, old, updated, None, None, dry_run, False, None)
            return self.scale(resource_type, name, namespace)

    if TYPE_CHECKING:  # last: below this line `list` would name the method
        def list(self, resource: Ref, namespace: str | None = None, *, label_selector_text: str = "",
                 field_selector_text: str = "") -> builtins.list[dict[str, Any]]: ...
