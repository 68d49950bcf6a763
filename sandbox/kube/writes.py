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
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sandbox import clock
from sandbox.kube import customresources, defaults, meta
from sandbox.kube import patch as patches
from sandbox.kube.builtins import NAMESPACE_DEFAULTS, PROTECTED_NAMESPACES
from sandbox.kube.errors import (
    STALE,
    already_exists,
    bad_request,
    conflict,
    forbidden_request,
    invalid,
    invalid_object,
    namespace_terminating,
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
FOREGROUND = "foregroundDeletion"


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
        def find(self, resource: Ref, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...
        def _bucket(self, resource_type: ResourceType) -> dict[tuple[str, str], dict[str, Any]]: ...
        def _key(self, resource_type: ResourceType, name: str, namespace: str | None) -> tuple[str, str]: ...
        def _stored(self, resource_type: ResourceType, name: str, namespace: str | None) -> dict[str, Any]: ...
        def _after_create(self, resource_type: ResourceType, obj: dict[str, Any]) -> None: ...
        def _after_update(self, resource_type: ResourceType, obj: dict[str, Any]) -> None: ...
        def _namespace_defaults(self, namespace: str) -> None: ...
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

    def _require_namespace(self, namespace: str, resource_type: ResourceType, name: str) -> None:
        """404 when ``namespace`` does not exist, 403 while it is Terminating (the NamespaceLifecycle admission)."""
        namespaces = self.registry.get(("", "namespaces"))
        assert namespaces is not None  # a built-in type
        holder = self._bucket(namespaces).get(("", namespace))
        if holder is None:
            raise not_found("", "namespaces", namespace)
        if holder["metadata"].get("deletionTimestamp"):
            raise namespace_terminating(resource_type.group, resource_type.plural, name, namespace)

    def _require_service_account(self, namespace: str, pod: dict[str, Any]) -> None:
        """403 when the pod's ServiceAccount (``spec.serviceAccountName``, defaulted to ``default``) does not exist in
        its namespace (the ServiceAccount admission plugin): a controller's pod waits for it to be made."""
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        if self.find("serviceaccounts", account, namespace) is None:
            raise forbidden_request("", "pods", pod["metadata"].get("name", ""),
                                    f"error looking up service account {namespace}/{account}: serviceaccount "
                                    f'"{account}" not found')

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
                self._require_namespace(namespace, resource_type, metadata.get("name", ""))
            if resource_type.has("status") and resource_type.plural not in defaults.KEEP_STATUS_ON_CREATE:
                obj.pop("status", None)
            found = self._prepare(resource_type, obj, version, None, strict)
            if resource_type.plural == "pods" and not resource_type.group:
                self._require_service_account(namespace, obj)
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
            if self._owner_deleting_in_foreground(obj):
                self._delete_or_mark(resource_type, obj, "Foreground")
            return copy.deepcopy(self._bucket(resource_type).get(key, obj))

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
        if resource_type.plural == "namespaces" and candidate["metadata"].get("deletionTimestamp"):
            self._finish_namespace(old_meta["name"])
        elif candidate["metadata"].get("deletionTimestamp") and not candidate["metadata"].get("finalizers") and \
                not candidate["metadata"].get("deletionGracePeriodSeconds"):
            return self._remove(resource_type, candidate, "Background")
        return copy.deepcopy(candidate)

    def bind(self, name: str, namespace: str | None, node_name: str) -> dict[str, Any]:
        """The ``pods/binding`` subresource: set an unbound pod's ``spec.nodeName`` in place (409 if bound).

        The pod keeps its uid and stays listed throughout, as the apiserver binds it; a watch sees MODIFIED."""
        with self.transaction():
            resource_type = self.resolve("pods")
            old = self._stored(resource_type, name, namespace)
            bound = old["spec"].get("nodeName")
            if bound:
                raise conflict("", "pods", name, f"pod {name} is already assigned to node \"{bound}\"")
            candidate = copy.deepcopy(old)
            candidate["spec"]["nodeName"] = node_name
            candidate["metadata"]["resourceVersion"] = str(self._next_rv())
            self._bucket(resource_type)[self._key(resource_type, name, namespace)] = candidate
            self._emit("MODIFIED", resource_type, candidate, old)
            self._after_update(resource_type, candidate)
            return copy.deepcopy(candidate)

    # -- delete -------------------------------------------------------------------------------------------

    def delete(self, resource: Any, name: str, namespace: str | None = None, *, propagation: str | None = None,
               preconditions: dict[str, str] | None = None, dry_run: bool = False,
               grace_period: int | None = None) -> dict[str, Any]:
        """DELETE, as the apiserver and its garbage collector do it. Returns the object's last state.

        - An object with ``metadata.finalizers`` only gets ``deletionTimestamp``; it goes once an update empties
          them.
        - A pod bound to a node that has not finished is deleted gracefully: ``deletionTimestamp`` (now + the grace
          period) and ``deletionGracePeriodSeconds`` (``grace_period``, else ``spec.terminationGracePeriodSeconds``)
          are set and the kubelet (the simulator) removes it once the period has passed on the sandbox clock.
          ``grace_period=0`` removes it at once, as does deleting an unbound or finished pod.
        - A namespace turns ``Terminating``: its contents are deleted (as above) and it goes once it is empty.
        - Dependents (objects whose ``ownerReferences`` point at it) are deleted after the object is gone
          (``Background``, the default), before it (``Foreground``: the object keeps the ``foregroundDeletion``
          finalizer until every dependent with ``blockOwnerDeletion`` is gone) or not at all (``Orphan``: their
          references to it are dropped)."""
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
            if grace_period is not None and grace_period < 0:
                raise invalid_object(resource_type.group, resource_type.kind, name, [
                    invalid("gracePeriodSeconds", grace_period, "must be greater than or equal to 0")])
            if dry_run:
                return copy.deepcopy(obj)
            policy = propagation or ("Orphan" if resource_type.plural in _ORPHAN_BY_DEFAULT else "Background")
            return self._delete_or_mark(resource_type, obj, policy, grace_period)

    def _grace(self, resource_type: ResourceType, obj: dict[str, Any], requested: int | None) -> int:
        """The grace period a deletion of ``obj`` gets (pods only: unbound or finished pods get none)."""
        if resource_type.plural != "pods":
            return 0
        spec, phase = obj.get("spec") or {}, (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        return requested if requested is not None else int(spec.get("terminationGracePeriodSeconds", 30))

    def _delete_or_mark(self, resource_type: ResourceType, obj: dict[str, Any], policy: str,
                        grace_period: int | None = None) -> dict[str, Any]:
        if resource_type.plural == "namespaces":
            return self._terminate_namespace(obj)
        metadata = obj["metadata"]
        grace = self._grace(resource_type, obj, grace_period)
        waits = policy == "Foreground" and self._blocking_dependents(metadata["uid"])
        if not metadata.get("finalizers") and not grace and not waits:
            return self._remove(resource_type, obj, policy)
        if metadata.get("deletionTimestamp"):
            if grace < int(metadata.get("deletionGracePeriodSeconds") or 0):
                return self._shorten_grace(resource_type, obj, grace)
            return copy.deepcopy(obj)
        marked = copy.deepcopy(obj)
        marked["metadata"].update(deletionTimestamp=meta.rfc3339(clock.now() + grace),
                                  deletionGracePeriodSeconds=grace, resourceVersion=str(self._next_rv()))
        if waits:
            marked["metadata"]["finalizers"] = [*(metadata.get("finalizers") or []), FOREGROUND]
        self._bucket(resource_type)[(metadata.get("namespace", ""), metadata["name"])] = marked
        self._emit("MODIFIED", resource_type, marked, obj)
        if waits:
            self._collect_dependents(metadata["uid"], "Foreground")
        return copy.deepcopy(self._bucket(resource_type).get(
            (metadata.get("namespace", ""), metadata["name"]), marked))

    def _shorten_grace(self, resource_type: ResourceType, obj: dict[str, Any], grace: int) -> dict[str, Any]:
        if not grace and not obj["metadata"].get("finalizers"):
            return self._remove(resource_type, obj, "Background")
        shortened = copy.deepcopy(obj)
        shortened["metadata"].update(deletionTimestamp=meta.rfc3339(clock.now() + grace),
                                     deletionGracePeriodSeconds=grace, resourceVersion=str(self._next_rv()))
        self._bucket(resource_type)[(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = shortened
        self._emit("MODIFIED", resource_type, shortened, obj)
        return copy.deepcopy(shortened)

    def _terminate_namespace(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Mark the namespace ``Terminating`` and delete what it holds (the namespace controller's job)."""
        name = obj["metadata"]["name"]
        namespaces = self.resolve("namespaces")
        marked = obj
        if not obj["metadata"].get("deletionTimestamp"):
            marked = copy.deepcopy(obj)
            marked["metadata"].update(deletionTimestamp=meta.rfc3339(), deletionGracePeriodSeconds=0,
                                      resourceVersion=str(self._next_rv()))
            marked.setdefault("status", {})["phase"] = "Terminating"
            self._bucket(namespaces)[("", name)] = marked
            self._emit("MODIFIED", namespaces, marked, obj)
        for contained_type in self.registry.all():
            if not contained_type.namespaced:
                continue
            bucket = self._bucket(contained_type)
            for key in [key for key in bucket if key[0] == name]:
                contained = bucket.get(key)
                if contained is not None and not contained["metadata"].get("deletionTimestamp"):
                    self._delete_or_mark(contained_type, contained, "Background")
        self._finish_namespace(name)
        return copy.deepcopy(self._bucket(namespaces).get(("", name), marked))

    def _finish_namespace(self, name: str) -> None:
        """Remove a Terminating namespace once nothing is left in it."""
        namespaces = self.resolve("namespaces")
        namespace = self._bucket(namespaces).get(("", name))
        if namespace is None or not namespace["metadata"].get("deletionTimestamp") or \
                namespace["metadata"].get("finalizers"):
            return
        for contained_type in self.registry.all():
            if contained_type.namespaced and any(key[0] == name for key in self._bucket(contained_type)):
                return
        self._remove(namespaces, namespace, "Background")

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
        self._release_owners(obj)
        if resource_type.namespaced:
            self._after_remove_namespaced(resource_type, obj)
        return final

    def _after_remove_namespaced(self, resource_type: ResourceType, obj: dict[str, Any]) -> None:
        """A Terminating namespace goes once empty; an active one gets back what every namespace holds."""
        namespace = obj["metadata"].get("namespace", "")
        holder = self._bucket(self.resolve("namespaces")).get(("", namespace))
        if holder is None:
            return
        if holder["metadata"].get("deletionTimestamp"):
            self._finish_namespace(namespace)
        elif (resource_type.plural, obj["metadata"]["name"]) in NAMESPACE_DEFAULTS:
            self._namespace_defaults(namespace)

    def _dependents(self, owner_uid: str) -> Iterator[tuple[ResourceType, dict[str, Any], dict[str, Any]]]:
        """(type, dependent, its reference to the owner) for every object that ``owner_uid`` owns."""
        for dependent_type in self.registry.all():
            for dependent in list(self._bucket(dependent_type).values()):
                for reference in dependent["metadata"].get("ownerReferences") or []:
                    if reference.get("uid") == owner_uid:
                        yield dependent_type, dependent, reference
                        break

    def _owners_in_foreground_deletion(self, obj: dict[str, Any]) -> Iterator[tuple[ResourceType, Any, dict[str, Any],
                                                                                  dict[str, Any]]]:
        """The owners of ``obj`` (by ``ownerReferences``, the same uid) that wait in foreground deletion: each with
        its type, its key, its stored state and the reference to it."""
        namespace = obj["metadata"].get("namespace", "")
        for reference in obj["metadata"].get("ownerReferences") or []:
            group = reference.get("apiVersion", "").rpartition("/")[0]
            try:
                owner_type = self.registry.resolve((group, "", reference.get("kind", "")))
            except LookupError:
                continue
            key = (namespace if owner_type.namespaced else "", reference.get("name", ""))
            owner = self._bucket(owner_type).get(key)
            if owner is not None and owner["metadata"].get("uid") == reference.get("uid") and \
                    FOREGROUND in (owner["metadata"].get("finalizers") or []):
                yield owner_type, key, owner, reference

    def _owner_deleting_in_foreground(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` blocks the deletion of an owner already in foreground deletion: the garbage collector
        deletes such a late dependent at once (its owner's dependents were collected before it existed)."""
        return any(reference.get("blockOwnerDeletion")
                   for _, _, _, reference in self._owners_in_foreground_deletion(obj))

    def _blocking_dependents(self, owner_uid: str) -> bool:
        return any(reference.get("blockOwnerDeletion") for _, _, reference in self._dependents(owner_uid))

    def _release_owners(self, obj: dict[str, Any]) -> None:
        """A dependent is gone: an owner waiting in foreground deletion goes once no blocking dependent is left."""
        for owner_type, key, owner, _ in list(self._owners_in_foreground_deletion(obj)):
            if self._blocking_dependents(owner["metadata"]["uid"]):
                continue
            released = copy.deepcopy(owner)
            released["metadata"]["finalizers"] = [f for f in owner["metadata"]["finalizers"] if f != FOREGROUND]
            if not released["metadata"]["finalizers"]:
                del released["metadata"]["finalizers"]
                if not released["metadata"].get("deletionGracePeriodSeconds"):
                    self._remove(owner_type, released, "Background")
                    continue
            released["metadata"]["resourceVersion"] = str(self._next_rv())
            self._bucket(owner_type)[key] = released
            self._emit("MODIFIED", owner_type, released, owner)

    def _collect_dependents(self, owner_uid: str, policy: str) -> None:
        for dependent_type, dependent, _ in list(self._dependents(owner_uid)):
            key = (dependent["metadata"].get("namespace", ""), dependent["metadata"]["name"])
            dependent = self._bucket(dependent_type).get(key) or dependent
            references = dependent["metadata"].get("ownerReferences") or []
            remaining = [reference for reference in references if reference.get("uid") != owner_uid]
            if policy != "Orphan" and not remaining:
                if not dependent["metadata"].get("deletionTimestamp") or policy == "Foreground":
                    self._delete_or_mark(dependent_type, dependent, policy)
                continue
            if policy == "Foreground":  # the owner is still there: the references go when it does
                continue
            updated = copy.deepcopy(dependent)
            updated["metadata"]["ownerReferences"] = remaining
            if not remaining:
                del updated["metadata"]["ownerReferences"]
            updated["metadata"]["resourceVersion"] = str(self._next_rv())
            self._bucket(dependent_type)[key] = updated
            self._emit("MODIFIED", dependent_type, updated, dependent)

    def delete_collection(self, resource: Any, namespace: str | None = None, *, label_selector_text: str = "",
                          field_selector_text: str = "", propagation: str | None = None,
                          grace_period: int | None = None, dry_run: bool = False) -> list[dict[str, Any]]:
        """DELETE on a collection: every matching object, as ``delete`` would."""
        with self.transaction():
            matching = self.list(resource, namespace, label_selector_text=label_selector_text,
                                 field_selector_text=field_selector_text)
            return [self.delete(resource, obj["metadata"]["name"], obj["metadata"].get("namespace"),
                                propagation=propagation, grace_period=grace_period, dry_run=dry_run)
                    for obj in matching]

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
