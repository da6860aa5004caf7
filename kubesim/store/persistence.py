"""Keeping objects across restarts (`--state-dir`): a JSON snapshot written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kubesim.store.base import StoreBase
from kubesim.store.crds import resource_from_crd

_CRDS = "customresourcedefinitions.apiextensions.k8s.io"


class PersistenceMixin(StoreBase):
    def dump(self) -> dict[str, Any]:
        """Every stored object, CRDs first so a restore can register their types before their objects."""
        with self.lock:
            objects = [
                {"resource": key, "object": obj}
                for key in sorted(self._objects, key=lambda k: k != _CRDS)
                for bucket in self._objects[key].values()
                for obj in bucket.values()
            ]
            return {"resourceVersion": self._rv, "objects": objects}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a `dump()`; watch history starts after it (older resourceVersions answer 410)."""
        with self.lock:
            for entry in snapshot.get("objects", []):
                key, obj = entry["resource"], entry["object"]
                if key == _CRDS:
                    self.registry.add(resource_from_crd(obj))
                if self.registry.by_key(key) is None:
                    continue
                metadata = obj["metadata"]
                namespace = metadata.get("namespace", "")
                self._objects.setdefault(key, {}).setdefault(namespace, {})[metadata["name"]] = obj
                self._by_uid[metadata["uid"]] = (key, namespace, metadata["name"])
                self._reindex_owners((key, namespace, metadata["name"]), None, obj)
            self._order.clear()
            self._rv = max(self._rv, int(snapshot.get("resourceVersion", 0)))
            self._log.compact_all(self._rv)

    def save(self, path: Path) -> int:
        """Write the snapshot atomically (temp file + rename); returns the resourceVersion saved."""
        snapshot = self.dump()
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".state-", suffix=".json")
        with os.fdopen(handle, "w") as stream:
            json.dump(snapshot, stream)
        os.replace(temporary, path)
        return int(snapshot["resourceVersion"])

    def load(self, path: Path) -> bool:
        if not path.exists():
            return False
        self.restore(json.loads(path.read_text()))
        return True
