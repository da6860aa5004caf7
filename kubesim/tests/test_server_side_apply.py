"""Server-side apply with two field managers, through the real kubectl (`apply --server-side
--field-manager=…`): shared ownership, giving a field up, conflicts naming the owner, and force.
Contract tests: they could run against a real cluster."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from kubesim.apply import manager_name, server_side_apply
from kubesim.errors import ApiError

MANIFEST = textwrap.dedent("""
    apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: shared}}
    spec:
      replicas: {replicas}
      selector: {{matchLabels: {{app: shared}}}}
      template:
        metadata: {{labels: {{app: shared}}}}
        spec:
          containers:
          - {{name: web, image: "nginx:{tag}"}}
""")

ONLY_REPLICAS = textwrap.dedent("""
    apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: shared}}
    spec:
      replicas: {replicas}
""")


def _apply(kubectl: Any, manager: str, manifest: str, *extra: str, check: bool = True) -> Any:
    return kubectl(
        "apply", "--server-side", f"--field-manager={manager}", *extra, "-f", "-", stdin=manifest, check=check
    )


def _deployment(kubectl: Any) -> dict[str, Any]:
    shown = kubectl("get", "deployment", "shared", "-o", "json", "--show-managed-fields")
    return dict(json.loads(shown.stdout))


def _managers_of_replicas(deployment: dict[str, Any]) -> set[str]:
    return {
        entry["manager"]
        for entry in deployment["metadata"]["managedFields"]
        if "f:replicas" in (entry.get("fieldsV1") or {}).get("f:spec", {})
    }


def test_two_managers_applying_the_same_value_share_the_field(kubectl: Any) -> None:
    """The Server-Side Apply documentation: "If two or more appliers set a field to the same value, they
    share ownership of that field" — both managers are listed in managedFields, and no conflict."""
    _apply(kubectl, "alice", MANIFEST.format(replicas=2, tag=1))
    shared = _apply(kubectl, "bob", ONLY_REPLICAS.format(replicas=2))
    assert "serverside-applied" in shared.stdout
    assert _managers_of_replicas(_deployment(kubectl)) == {"alice", "bob"}


def test_a_shared_field_stays_when_one_owner_drops_it(kubectl: Any) -> None:
    """The documentation: "Shared field owners may give up ownership of a field by making a Server-Side
    Apply patch request that doesn't include that field"; a field still owned by someone else is not
    removed from the object."""
    _apply(kubectl, "alice", MANIFEST.format(replicas=3, tag=1))
    _apply(kubectl, "bob", ONLY_REPLICAS.format(replicas=3))
    without_replicas = MANIFEST.format(replicas=3, tag=1).replace("  replicas: 3\n", "")
    _apply(kubectl, "alice", without_replicas)
    deployment = _deployment(kubectl)
    assert deployment["spec"]["replicas"] == 3
    assert _managers_of_replicas(deployment) == {"bob"}


def test_a_different_value_from_another_manager_is_a_409_naming_the_manager(kubectl: Any) -> None:
    """The documentation: a conflict is "an operation that would change a field that another manager also
    claims", reported as 409 with the fields and their managers; "the field remains with its current
    value" until the applier forces it (`--force-conflicts`), which "removes the field from all other
    managers' entries in managedFields"."""
    _apply(kubectl, "alice", MANIFEST.format(replicas=2, tag=1))
    _apply(kubectl, "bob", ONLY_REPLICAS.format(replicas=2))
    clash = _apply(kubectl, "carol", ONLY_REPLICAS.format(replicas=5), check=False)
    assert clash.returncode != 0
    assert "Apply failed with 2 conflicts" in clash.stderr
    assert 'conflicts with "alice":' in clash.stderr
    assert 'conflicts with "bob":' in clash.stderr
    assert "- .spec.replicas" in clash.stderr
    assert _deployment(kubectl)["spec"]["replicas"] == 2
    image = _apply(kubectl, "carol", MANIFEST.format(replicas=2, tag=2), check=False)
    assert 'Apply failed with 1 conflict: conflict with "alice": ' in image.stderr
    assert '.spec.template.spec.containers[name="web"].image' in image.stderr
    _apply(kubectl, "carol", ONLY_REPLICAS.format(replicas=5), "--force-conflicts")
    deployment = _deployment(kubectl)
    assert deployment["spec"]["replicas"] == 5
    assert _managers_of_replicas(deployment) == {"carol"}


def test_a_conflict_with_an_update_names_its_api_version_and_time() -> None:
    """The apiserver's `printManager`: an Update manager is printed `"name" using <apiVersion> at
    <time>`, with ` with subresource "scale"` when it wrote through one; an Apply manager by name."""
    update = {
        "manager": "hpa",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "time": "2026-01-01T00:00:00Z",
    }
    assert manager_name(update) == '"hpa" using apps/v1 at 2026-01-01T00:00:00Z'
    assert manager_name({**update, "subresource": "scale"}).startswith('"hpa" with subresource "scale" using')
    assert manager_name({"manager": "ci", "operation": "Apply"}) == '"ci"'
    live = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "managedFields": [{**update, "fieldsV1": {"f:data": {"f:a": {}}}}]},
        "data": {"a": "1"},
    }
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}}
    with pytest.raises(ApiError) as clash:
        server_side_apply(live, config, "ci", None, force=False, now="2026-01-02T00:00:00Z")
    assert clash.value.code == 409
    assert clash.value.message == (
        'Apply failed with 1 conflict: conflict with "hpa" using apps/v1 at 2026-01-01T00:00:00Z: .data.a'
    )
