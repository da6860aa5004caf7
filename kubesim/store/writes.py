"""Create, update (PUT), patch, server-side apply and `mutate`: every write funnels into `_commit`."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from kubesim import apply as ssa
from kubesim import meta, schema
from kubesim.builtins import updates
from kubesim.errors import (
    ApiError,
    Cause,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
    unsupported_media_type,
)
from kubesim.jsonutil import clone
from kubesim.openapi import catalog, fields
from kubesim.patch import patched
from kubesim.resources import PatchMeta, ResourceType
from kubesim.store.base import AdmissionHook, AdmissionRequest, StoreBase, WriteOptions
from kubesim.store.crds import crd_causes, crd_status, resource_from_crd
from kubesim.store.events import ADDED, MODIFIED
from kubesim.store.kinds import builtin_causes, default_on_create, default_on_write, update_causes

_IDENTITY = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)
_SERVER_SET = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
PATCH_TYPES = ("merge", "json", "strategic", "apply")


def _is_crd(resource: ResourceType) -> bool:
    return resource.group == "apiextensions.k8s.io" and resource.kind == "CustomResourceDefinition"


def _metadata(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise bad_request("the object must be a JSON object")
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object")
    return metadata


def _decoded(resource: ResourceType, obj: dict[str, Any], options: WriteOptions) -> dict[str, Any]:
    """A built-in object as its Go struct keeps it: a wrong type is a 400, unknown fields are dropped
    (and reported as `fieldValidation` asks). A simulated controller's own writes are trusted."""
    if options.trusted:
        return obj
    version = options.version or resource.storage_version
    definition = catalog.definition_name(resource.group, version, resource.kind)
    if definition is None:
        return obj
    decoded = fields.decode(obj, definition)
    if decoded.type_error:
        raise bad_request(f"{_cannot_handle(resource, options)}: {decoded.type_error}")
    _report_unknown(resource, options, decoded.unknown)
    return decoded.obj


def _cannot_handle(resource: ResourceType, options: WriteOptions) -> str:
    version = options.version or resource.storage_version
    return f'{resource.kind} in version "{version}" cannot be handled as a {resource.kind}'


def _report_unknown(resource: ResourceType, options: WriteOptions, unknown: list[str]) -> None:
    """Duplicate and unknown fields: a 400 under Strict, `Warning`s under Warn, nothing under Ignore."""
    problems = [f'duplicate field "{key}"' for key in options.duplicate_fields]
    problems += [f'unknown field "{path}"' for path in unknown]
    if not problems or options.field_validation == "Ignore":
        return
    if options.field_validation == "Strict":
        listed = ", ".join(problems)
        raise bad_request(f"{_cannot_handle(resource, options)}: strict decoding error: {listed}")
    options.warnings.extend(problems)


class WritesMixin(StoreBase):
    """The write verbs. Admission hooks and validation run outside the lock; the commit re-checks."""

    _mutating: list[AdmissionHook]

    # --- admission extension point -------------------------------------------------------------------

    def add_admission(self, hook: AdmissionHook, *, mutating: bool = False) -> Callable[[], None]:
        """Register a hook run before every create/update/delete commit; returns a remover.

        Mutating hooks run before schema validation and may return a replacement object; validating hooks
        run after it. Either rejects by raising ApiError.
        """
        chain = self._mutating if mutating else self._admission
        chain.append(hook)
        return lambda: chain.remove(hook) if hook in chain else None

    def _run_admission(self, request: AdmissionRequest, chain: list[AdmissionHook]) -> dict[str, Any] | None:
        for hook in list(chain):
            replaced = hook(request)
            if replaced is not None:
                request.object = replaced
        return request.object

    # --- shared steps --------------------------------------------------------------------------------

    def _patch_meta(self, resource: ResourceType) -> PatchMeta:
        if resource.patch_meta is not None:
            return resource.patch_meta
        return {"metadata": {}, **ssa.schema_patch_meta(resource.schema())}

    def _validated(
        self,
        resource: ResourceType,
        obj: dict[str, Any],
        options: WriteOptions,
        old: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Defaults, pruning and validation; raises 422 (or 400 for unknown fields under Strict)."""
        default_on_write(resource, obj)
        metadata = obj["metadata"]
        causes = meta.name_causes(metadata["name"], resource.kind) + meta.label_causes(metadata)
        if resource.builtin:
            obj = _decoded(resource, obj, options)
            causes += builtin_causes(resource, obj, old)
            if _is_crd(resource):
                causes += crd_causes(obj)
        else:
            result = schema.check(obj, resource.schema(options.version or None))
            obj, causes = result.obj, causes + result.causes
            _report_unknown(resource, options, result.unknown)
        if causes:
            raise invalid(resource.kind, resource.group, metadata.get("name", ""), causes)
        if _is_crd(resource):
            obj["status"] = crd_status(obj, self.clock.timestamp())
        return obj

    def _admitted(
        self,
        resource: ResourceType,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        options: WriteOptions,
        subresource: str,
    ) -> dict[str, Any]:
        metadata = obj["metadata"]
        request = AdmissionRequest(
            operation,
            resource,
            metadata.get("namespace", ""),
            metadata["name"],
            obj,
            old,
            subresource,
            options.dry_run,
            options.user_agent,
            options.warnings,
            options.user,
        )
        obj = self._run_admission(request, self._mutating) or obj
        obj = self._validated(resource, obj, options, old)
        if old is not None and resource.builtin:
            causes = update_causes(resource, obj, old)
            if causes:
                raise invalid(resource.kind, resource.group, metadata["name"], causes)
        request.object = obj
        return self._run_admission(request, self._admission) or obj

    def _in_storage_shape(
        self, resource: ResourceType, obj: dict[str, Any], options: WriteOptions
    ) -> dict[str, Any]:
        """A body sent in a version stored in another shape (an autoscaling/v1 HorizontalPodAutoscaler):
        decoded against its own version (unknown fields reported in its terms), then converted to the
        storage version's shape, in which the write goes on (`options.version` says so). The version is
        the request's, or the body's `apiVersion` from Python."""
        version = options.version or str(obj.get("apiVersion", "")).rpartition("/")[2]
        conversion = resource.conversions.get(version)
        if conversion is None:
            return obj
        obj = _decoded(resource, obj, dataclasses.replace(options, version=version))
        options.duplicate_fields = []
        options.version = resource.storage_version
        return conversion.to_storage(obj)

    def _namespace_for(self, resource: ResourceType, namespace: str | None) -> str:
        if not resource.namespaced:
            return ""
        return namespace or "default"

    def _check_namespace(self, resource: ResourceType, namespace: str) -> None:
        if not resource.namespaced:
            return
        found = self._objects.get("namespaces", {}).get("", {}).get(namespace)
        if found is None:
            raise not_found("namespaces", "", namespace)
        if found["metadata"].get("deletionTimestamp"):
            raise forbidden(
                f"unable to create new content in namespace {namespace} because it is being terminated"
            )

    def _after_commit(self, resource: ResourceType, obj: dict[str, Any]) -> None:
        if _is_crd(resource):
            self.registry.add(resource_from_crd(obj))

    # --- create --------------------------------------------------------------------------------------

    def create(
        self,
        obj: dict[str, Any],
        namespace: str | None = None,
        *,
        resource: str | ResourceType | None = None,
        options: WriteOptions | None = None,
    ) -> dict[str, Any]:
        """Create an object (POST). The namespace defaults to metadata.namespace, then `default`."""
        options = options or WriteOptions()
        stored, obj = self.storage_of(obj, resource)
        obj = self._in_storage_shape(stored, clone(obj), options)
        return self._create(stored, obj, namespace, options, managed=False)

    def _create(
        self,
        resource: ResourceType,
        obj: dict[str, Any],
        namespace: str | None,
        options: WriteOptions,
        *,
        managed: bool,
    ) -> dict[str, Any]:
        metadata = _metadata(obj)
        namespace = self._namespace_for(
            resource, namespace if namespace is not None else metadata.get("namespace")
        )
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise invalid(
                    resource.kind,
                    resource.group,
                    "",
                    [
                        Cause(
                            "metadata.name",
                            "Required value: name or generateName is required",
                            "FieldValueRequired",
                        )
                    ],
                )
            metadata["name"] = meta.generated_name(metadata["generateName"])
        for server_field in _SERVER_SET:
            metadata.pop(server_field, None)
        if namespace:
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        metadata.update(uid=str(uuid.uuid4()), creationTimestamp=self.clock.timestamp(), generation=1)
        obj = {
            "apiVersion": resource.api_version(),
            "kind": resource.kind,
            **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")},
        }
        if resource.has_status:
            obj.pop("status", None)
        default_on_create(resource, obj)
        if not managed:
            metadata.pop("managedFields", None)
            ssa.record_update(
                None,
                obj,
                options.field_manager or "unknown",
                self._patch_meta(resource),
                self.clock.timestamp(),
            )
        obj = self._admitted(resource, "CREATE", obj, None, options, "")
        with self.lock:
            self._check_namespace(resource, namespace)
            if self._snapshot(resource, namespace, obj["metadata"]["name"]) is not None:
                raise already_exists(resource.plural, resource.group, obj["metadata"]["name"])
            if options.dry_run:
                return obj
            self._commit(resource, ADDED, obj, None)
            self._after_commit(resource, obj)
            return obj

    # --- update, patch, apply ------------------------------------------------------------------------

    def update(
        self,
        obj: dict[str, Any],
        *,
        resource: str | ResourceType | None = None,
        namespace: str | None = None,
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> dict[str, Any]:
        """Replace an object (PUT); a stale metadata.resourceVersion answers 409 Conflict."""
        resource, obj = self.storage_of(obj, resource)
        options = options or WriteOptions()
        body = self._in_storage_shape(resource, clone(obj), options)
        metadata = _metadata(body)
        name = metadata.get("name", "")
        namespace = self._namespace_for(
            resource, namespace if namespace is not None else metadata.get("namespace")
        )
        return self._update(resource, namespace, name, lambda _old: body, options, subresource)

    def update_status(self, obj: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self.update(obj, subresource="status", **kwargs)

    def patch(
        self,
        resource: str | ResourceType,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        namespace: str | None = None,
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> dict[str, Any]:
        """PATCH with `merge`, `json`, `strategic` or `apply` (server-side apply; creates if missing)."""
        resource = self.resource(resource)
        options = options or WriteOptions()
        namespace = self._namespace_for(resource, namespace)
        if patch_type == "strategic" and not resource.builtin:
            raise unsupported_media_type("application/strategic-merge-patch+json")
        if patch_type == "apply":
            if options.version in resource.conversions:
                raise unsupported_media_type(
                    f"application/apply-patch+yaml (through {resource.api_version(options.version)})"
                )
            return self._apply(resource, namespace, name, patch, options, subresource)
        if patch_type not in PATCH_TYPES:
            raise unsupported_media_type(patch_type)
        if patch_type == "merge" and not isinstance(patch, dict):
            raise bad_request("merge patch: the patch must be a JSON object")

        conversion = resource.conversions.get(options.version)
        version = options.version  # the version the patch is written against

        def compute(old: dict[str, Any]) -> dict[str, Any]:
            shown = conversion.to_version(old) if conversion is not None else old
            new = patched(shown, patch, patch_type, resource.patch_meta)
            if conversion is None:
                return new
            return self._in_storage_shape(resource, new, dataclasses.replace(options, version=version))

        if conversion is not None:
            options.version = resource.storage_version
        return self._update(resource, namespace, name, compute, options, subresource)

    def mutate_object(
        self,
        resource: str | ResourceType,
        obj: dict[str, Any],
        change: Callable[[dict[str, Any]], dict[str, Any] | None],
        *,
        subresource: str = "",
        field_manager: str = "kubesim",
    ) -> dict[str, Any]:
        """`mutate` of the object a controller read (by its name and namespace): how it writes one back."""
        metadata = obj["metadata"]
        return self.mutate(
            resource,
            metadata["name"],
            change,
            namespace=metadata.get("namespace", ""),
            subresource=subresource,
            field_manager=field_manager,
        )

    def mutate(
        self,
        resource: str | ResourceType,
        name: str,
        change: Callable[[dict[str, Any]], dict[str, Any] | None],
        *,
        namespace: str | None = None,
        subresource: str = "",
        field_manager: str = "kubesim",
    ) -> dict[str, Any]:
        """Read-modify-write for simulated controllers: `change` edits a copy (or returns a new object).

        It is retried on concurrent writes, so it must be a pure function of the object it is given.
        """
        resource = self.resource(resource)

        def compute(old: dict[str, Any]) -> dict[str, Any]:
            changed = change(old)
            return old if changed is None else changed

        options = WriteOptions(field_manager=field_manager, trusted=True)
        return self._update(
            resource, self._namespace_for(resource, namespace), name, compute, options, subresource
        )

    def _apply(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        config: Any,
        options: WriteOptions,
        subresource: str,
    ) -> dict[str, Any]:
        if not isinstance(config, dict):
            raise bad_request("apply patch: the configuration must be an object")
        if not options.field_manager:
            raise bad_request("PATCH request with apply patch type requires fieldManager")
        if not config.get("apiVersion") or not config.get("kind"):
            raise bad_request("apply patch: apiVersion and kind are required")
        if (config.get("metadata") or {}).get("name", name) != name:
            raise bad_request(
                f"the name of the object ({config['metadata']['name']}) "
                f"does not match the name on the URL ({name})"
            )
        patch_meta = self._patch_meta(resource)

        def compute(old: dict[str, Any] | None) -> dict[str, Any]:
            return ssa.server_side_apply(
                old,
                config,
                options.field_manager,
                patch_meta,
                force=options.force,
                now=self.clock.timestamp(),
                subresource=subresource,
            )

        with self.lock:
            exists = self._snapshot(resource, namespace, name) is not None
        if not exists and not subresource:
            created = compute(None)
            created.setdefault("metadata", {})["name"] = name
            try:
                return self._create(resource, created, namespace, options, managed=True)
            except ApiError as error:
                if error.reason != "AlreadyExists":
                    raise
        return self._update(resource, namespace, name, compute, options, subresource, record=False)

    def _update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        compute: Callable[[dict[str, Any]], dict[str, Any]],
        options: WriteOptions,
        subresource: str,
        *,
        record: bool = True,
    ) -> dict[str, Any]:
        for _attempt in range(20):
            with self.lock:
                old = self._snapshot(resource, namespace, name)
            if old is None:
                raise not_found(resource.plural, resource.group, name)
            new = self._updated(resource, old, compute(clone(old)), options, subresource, record)
            if meta.comparable(new) == meta.comparable(old):
                return old
            if resource.builtin and not subresource and not options.trusted:
                causes = updates.update_causes(resource.group, resource.kind, old, new)
                if causes:
                    raise invalid(resource.kind, resource.group, name, causes)
            new = self._admitted(resource, "UPDATE", new, old, options, subresource)
            if options.dry_run:
                return new
            with self.lock:
                if self._snapshot(resource, namespace, name) is not old:
                    continue
                return self._commit_update(resource, new, old)
        raise conflict(resource.plural, resource.group, name, "too many concurrent writers")

    def _updated(
        self,
        resource: ResourceType,
        old: dict[str, Any],
        new: Any,
        options: WriteOptions,
        subresource: str,
        record: bool,
    ) -> dict[str, Any]:
        """The object a write would store: identity kept, status rules applied, generation bumped."""
        new_meta = _metadata(new)
        old_meta = old["metadata"]
        name = old_meta["name"]
        if new_meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({new_meta.get('name')}) does not match the name on the URL ({name})"
            )
        given = new_meta.get("resourceVersion")
        if given and given != old_meta["resourceVersion"]:
            raise conflict(resource.plural, resource.group, name)
        if subresource == "status":
            status = new.get("status")
            new = clone(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            new_meta = new["metadata"]
        elif resource.has_status:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        for identity in _IDENTITY:
            if identity in old_meta:
                new_meta[identity] = old_meta[identity]
            else:
                new_meta.pop(identity, None)
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        new["apiVersion"], new["kind"] = resource.api_version(), resource.kind
        added = set(new_meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if old_meta.get("deletionTimestamp") and added:
            raise invalid(
                resource.kind,
                resource.group,
                name,
                [
                    Cause(
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted",
                        "FieldValueForbidden",
                    )
                ],
            )
        if resource.builtin and subresource != "status":
            updates.carry_allocated(resource.group, resource.kind, old, new)
        default_on_write(resource, new)  # before comparing: a default left out of a PUT is no change
        bump = meta.spec_changed(old, new, resource.has_status)
        new_meta["generation"] = int(old_meta.get("generation") or 1) + (1 if bump else 0)
        if record:
            new_meta["managedFields"] = clone(old_meta.get("managedFields") or [])
            ssa.record_update(
                old,
                new,
                options.field_manager or "unknown",
                self._patch_meta(resource),
                self.clock.timestamp(),
                subresource,
            )
        return new

    def _commit_update(
        self, resource: ResourceType, new: dict[str, Any], old: dict[str, Any]
    ) -> dict[str, Any]:
        """Commit a MODIFIED; an object being deleted whose last finalizer went is then removed (unless it
        is in a graceful deletion, which its kubelet ends with a zero-grace delete)."""
        committed = self._commit(resource, MODIFIED, new, old)
        self._after_commit(resource, committed)
        metadata = committed["metadata"]
        graceful = bool(metadata.get("deletionGracePeriodSeconds"))
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers") and not graceful:
            self._remove(resource, committed)  # type: ignore[attr-defined]
        for ref in old["metadata"].get("ownerReferences") or []:  # a dependent that stopped blocking
            self._finish_foreground(ref.get("uid", ""))  # type: ignore[attr-defined]
        return committed
