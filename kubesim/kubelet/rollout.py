"""Pure: what kube-controller-manager's Deployment controller decides (pkg/controller/deployment and its
util package), over plain Deployment and ReplicaSet dicts.

The new ReplicaSet is the one whose template equals the Deployment's ignoring `pod-template-hash`; its
revision is one more than the old ones'. RollingUpdate scales it up within `maxSurge` and the old ones down
within `maxUnavailable`; a scaling event scales every active ReplicaSet in proportion. The status is
kubesim.kubelet.progress's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# Annotations a ReplicaSet does not take from its Deployment (and `kubectl rollout undo` keeps on it).
NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
REVISION_HISTORY_CHARS = 2000  # the Deployment controller's maxRevHistoryLengthInChars

_NO_DEADLINE = 2**31 - 1  # math.MaxInt32: "no progress deadline"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.SafeEncodeString alphabet


@dataclass(frozen=True)
class Rollout:
    """What the controller reads from a Deployment, parsed once (defaults are the apiserver's)."""

    name: str
    namespace: str
    generation: int
    replicas: int
    rolling: bool
    max_surge: int
    max_unavailable: int
    min_ready_seconds: int
    revision_history_limit: int | None
    progress_deadline: int | None
    paused: bool
    collision_count: int | None

    @classmethod
    def parse(cls, deployment: dict[str, Any]) -> Rollout:
        metadata, spec = deployment["metadata"], deployment.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        strategy = spec.get("strategy") or {}
        rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
        surge, unavailable = 0, 0
        if rolling:
            update = strategy.get("rollingUpdate") or {}
            surge = scaled_value(update.get("maxSurge", "25%"), replicas, round_up=True)
            unavailable = scaled_value(update.get("maxUnavailable", "25%"), replicas, round_up=False)
            if surge == 0 and unavailable == 0:  # ResolveFenceposts: the rollout must be able to move
                unavailable = 1
            unavailable = min(unavailable, replicas)
        limit = spec.get("revisionHistoryLimit")
        deadline = spec.get("progressDeadlineSeconds")
        collisions = (deployment.get("status") or {}).get("collisionCount")
        return cls(
            name=metadata["name"],
            namespace=metadata.get("namespace", ""),
            generation=int(metadata.get("generation") or 1),
            replicas=replicas,
            rolling=rolling,
            max_surge=surge,
            max_unavailable=unavailable if replicas else 0,
            min_ready_seconds=int(spec.get("minReadySeconds") or 0),
            revision_history_limit=None if limit is None else int(limit),
            progress_deadline=None if deadline is None or deadline == _NO_DEADLINE else int(deadline),
            paused=bool(spec.get("paused")),
            collision_count=None if collisions is None else int(collisions),
        )


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, `"25%"` of `total` rounded up or down."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        return int(text) if text.isdigit() else 0
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


# --- ReplicaSet accessors -------------------------------------------------------------------------------


def replicas(rs: dict[str, Any] | None) -> int:
    return int((rs.get("spec") or {}).get("replicas", 1)) if rs else 0


def _status(rs: dict[str, Any] | None, field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0) if rs else 0


def total_replicas(sets: list[dict[str, Any]]) -> int:
    """GetReplicaCountForReplicaSets: the replicas they ask for."""
    return sum(replicas(rs) for rs in sets)


def actual_replicas(sets: list[dict[str, Any]]) -> int:
    return sum(_status(rs, "replicas") for rs in sets)


def available_replicas(sets: list[dict[str, Any]]) -> int:
    return sum(_status(rs, "availableReplicas") for rs in sets)


def revision(obj: dict[str, Any]) -> int:
    text = (obj["metadata"].get("annotations") or {}).get(REVISION, "")
    return int(text) if text.isdigit() else 0


def active(sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """FilterActiveReplicaSets: those asking for at least one pod."""
    return [rs for rs in sets if replicas(rs) > 0]


def by_creation(sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ReplicaSetsByCreationTimestamp: oldest first, then by name."""
    return sorted(sets, key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]))


# --- the new ReplicaSet ---------------------------------------------------------------------------------


def template_hash(template: dict[str, Any], collision_count: int | None = None) -> str:
    """controller.ComputeHash: an FNV-32a hash of the pod template (and the collision count), in the
    label-safe alphabet. (Upstream hashes Go's printout of the struct; this hashes its JSON.)"""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    if collision_count is not None:
        text += str(collision_count)
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[int(d) % len(_SAFE)] for d in str(value))


def _semantic(value: Any) -> Any:
    """A value compared as apiequality.Semantic does: empty maps and lists equal missing ones."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def without_hash(template: dict[str, Any]) -> dict[str, Any]:
    """The template without its `pod-template-hash` label."""
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    metadata["labels"] = labels
    return {**template, "metadata": metadata}


def equal_ignoring_hash(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """EqualIgnoreHash: two pod templates equal but for their `pod-template-hash` labels."""
    return _semantic(without_hash(first)) == _semantic(without_hash(second))


def find_new(deployment: dict[str, Any], sets: list[dict[str, Any]]) -> dict[str, Any] | None:
    """FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's."""
    template = (deployment.get("spec") or {}).get("template") or {}
    for rs in by_creation(sets):
        if equal_ignoring_hash((rs.get("spec") or {}).get("template") or {}, template):
            return rs
    return None


def new_replica_set(deployment: dict[str, Any], owner_reference: dict[str, Any]) -> dict[str, Any]:
    """The new ReplicaSet for the Deployment's template, before its replicas and annotations are set."""
    spec = deployment.get("spec") or {}
    template = json.loads(json.dumps(spec.get("template") or {}))
    pod_hash = template_hash(template, Rollout.parse(deployment).collision_count)
    template_metadata = template.setdefault("metadata", {})
    labels = {**(template_metadata.get("labels") or {}), POD_TEMPLATE_HASH: pod_hash}
    template_metadata["labels"] = labels
    selector = json.loads(json.dumps(spec.get("selector") or {}))
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: pod_hash}
    rs_spec: dict[str, Any] = {"replicas": 0, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{deployment['metadata']['name']}-{pod_hash}",
            "namespace": deployment["metadata"].get("namespace", ""),
            "labels": dict(labels),
            "ownerReferences": [owner_reference],
        },
        "spec": rs_spec,
    }


def max_revision(sets: list[dict[str, Any]]) -> int:
    return max((revision(rs) for rs in sets), default=0)


def replicas_annotations(rollout: Rollout) -> dict[str, str]:
    """SetReplicasAnnotations: the desired and maximum (desired + surge) replicas of the Deployment."""
    return {DESIRED_REPLICAS: str(rollout.replicas), MAX_REPLICAS: str(rollout.replicas + rollout.max_surge)}


def new_annotations(
    deployment: dict[str, Any], rs: dict[str, Any], new_revision: int, *, exists: bool
) -> dict[str, str]:
    """SetNewReplicaSetAnnotations: the Deployment's annotations (but NOT_COPIED), the revision if higher
    than the ReplicaSet's (a rollback keeps the revisions it had in `revision-history`), and, for a new
    ReplicaSet, the replicas annotations."""
    annotations = dict(rs["metadata"].get("annotations") or {})
    for key, value in (deployment["metadata"].get("annotations") or {}).items():
        if key not in NOT_COPIED:
            annotations[key] = value
    old_text = annotations.get(REVISION, "")
    if old_text and not old_text.isdigit():
        return annotations
    old = int(old_text or 0)
    if old < new_revision:
        annotations[REVISION] = str(new_revision)
        if old_text:
            history = [r for r in annotations.get(REVISION_HISTORY, "").split(",") if r]
            while history and len(",".join([*history, old_text])) > REVISION_HISTORY_CHARS:
                history.pop(0)
            annotations[REVISION_HISTORY] = ",".join([*history, old_text])
    if not exists:
        annotations.update(replicas_annotations(Rollout.parse(deployment)))
    return annotations


# --- scaling -------------------------------------------------------------------------------------------


def new_rs_replicas(rollout: Rollout, all_sets: list[dict[str, Any]], new_rs: dict[str, Any]) -> int:
    """NewRSNewReplicas: how far the new ReplicaSet may grow now (all at once for Recreate)."""
    if not rollout.rolling:
        return rollout.replicas
    current = total_replicas(all_sets)
    ceiling = rollout.replicas + rollout.max_surge
    if current >= ceiling:
        return replicas(new_rs)
    return replicas(new_rs) + min(ceiling - current, rollout.replicas - replicas(new_rs))


def is_scaling_event(rollout: Rollout, sets: list[dict[str, Any]]) -> bool:
    """Whether an active ReplicaSet was made for another `spec.replicas` (a scale, not a rollout)."""
    for rs in active(sets):
        desired = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS, "")
        if desired.isdigit() and int(desired) != rollout.replicas:
            return True
    return False


def _fraction(rs: dict[str, Any], rollout: Rollout, status_replicas: int) -> int:
    """getReplicaSetFraction: the ReplicaSet's share of the new size, from the size it was made for."""
    if rollout.replicas == 0:
        return -replicas(rs)
    allowed = rollout.replicas + rollout.max_surge
    annotated = (rs["metadata"].get("annotations") or {}).get(MAX_REPLICAS, "")
    made_for = int(annotated) if annotated.isdigit() else status_replicas
    if made_for == 0:
        return 0
    share = replicas(rs) * allowed / made_for
    return math.floor(share + 0.5) - replicas(rs)


def proportional_sizes(
    rollout: Rollout, new_rs: dict[str, Any] | None, old_sets: list[dict[str, Any]], status_replicas: int
) -> tuple[dict[str, int], bool]:
    """DeploymentController.scale after a scaling event: the replicas each ReplicaSet should ask for
    (ReplicaSet name → size), and whether sets keeping their size still take the new replicas annotations.
    The one active set (or with none, the new set, else the newest) takes everything; a saturated new set
    leaves the old ones at 0; otherwise, for RollingUpdate, each active set grows or shrinks in proportion
    to the size it was made for, and the largest takes the leftover."""
    everything = [rs for rs in [new_rs, *old_sets] if rs is not None]
    live = active(everything)
    if len(live) == 1:
        return {live[0]["metadata"]["name"]: rollout.replicas}, False
    if not live and everything:
        newest_old = max(old_sets, key=_created, default=None)
        chosen = new_rs if new_rs is not None else newest_old
        assert chosen is not None
        return {chosen["metadata"]["name"]: rollout.replicas}, False
    if new_rs is not None and _saturated(rollout, new_rs):
        return {rs["metadata"]["name"]: 0 for rs in active(old_sets)}, False
    if not rollout.rolling:
        return {}, False
    allowed = rollout.replicas + rollout.max_surge if rollout.replicas > 0 else 0
    to_add = allowed - total_replicas(live)
    if to_add > 0:  # ReplicaSetsBySizeNewer: larger first, then newer
        live.sort(key=lambda rs: (-replicas(rs), _descending(_created(rs))))
    elif to_add < 0:  # ReplicaSetsBySizeOlder: larger first, then older
        live.sort(key=lambda rs: (-replicas(rs), _created(rs)))
    sizes: dict[str, int] = {}
    added = 0
    for rs in live:
        proportion = 0
        if to_add != 0 and replicas(rs) != 0 and to_add != added:
            fraction = _fraction(rs, rollout, status_replicas)
            room = to_add - added
            proportion = min(fraction, room) if to_add > 0 else max(fraction, room)
        sizes[rs["metadata"]["name"]] = replicas(rs) + proportion
        added += proportion
    if live and to_add != 0:
        largest = live[0]["metadata"]["name"]
        sizes[largest] = max(0, sizes[largest] + to_add - added)
    return sizes, True


def _created(rs: dict[str, Any]) -> str:
    return str(rs["metadata"].get("creationTimestamp", ""))


def _descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def _saturated(rollout: Rollout, new_rs: dict[str, Any]) -> bool:
    """IsSaturated: the new ReplicaSet asks for, and has available, every replica."""
    desired = (new_rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS, "")
    return (
        desired == str(rollout.replicas)
        and replicas(new_rs) == rollout.replicas
        and _status(new_rs, "availableReplicas") == rollout.replicas
    )


def unhealthy_cleanup(old_sets: list[dict[str, Any]], limit: int) -> dict[str, int]:
    """cleanupUnhealthyReplicas: old ReplicaSets shrunk by their unavailable pods, oldest first, at most
    `limit` in all (name → new size)."""
    sizes: dict[str, int] = {}
    removed = 0
    for rs in by_creation(old_sets):
        if removed >= limit:
            break
        unavailable = replicas(rs) - _status(rs, "availableReplicas")
        if replicas(rs) == 0 or unavailable <= 0:
            continue
        down = min(limit - removed, unavailable)
        sizes[rs["metadata"]["name"]] = replicas(rs) - down
        removed += down
    return sizes


def rolling_scale_down(
    rollout: Rollout, all_sets: list[dict[str, Any]], old_sets: list[dict[str, Any]]
) -> dict[str, int]:
    """scaleDownOldReplicaSetsForRollingUpdate: old ReplicaSets shrunk, oldest first, while more than
    `replicas - maxUnavailable` pods stay available (name → new size)."""
    minimum = rollout.replicas - rollout.max_unavailable
    spare = available_replicas(all_sets) - minimum
    sizes: dict[str, int] = {}
    for rs in by_creation(old_sets):
        if spare <= 0:
            break
        if replicas(rs) == 0:
            continue
        down = min(replicas(rs), spare)
        sizes[rs["metadata"]["name"]] = replicas(rs) - down
        spare -= down
    return sizes


def old_scale_down_room(rollout: Rollout, all_sets: list[dict[str, Any]], new_rs: dict[str, Any]) -> int:
    """reconcileOldReplicaSets' maxScaledDown: how many old pods may go without dropping below
    `replicas - maxUnavailable` (counting the new set's unavailable pods as gone)."""
    minimum = rollout.replicas - rollout.max_unavailable
    new_unavailable = replicas(new_rs) - _status(new_rs, "availableReplicas")
    return total_replicas(all_sets) - minimum - new_unavailable


def history_to_delete(rollout: Rollout, old_sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """cleanupDeployment: the oldest revisions beyond `revisionHistoryLimit` that run nothing."""
    if rollout.revision_history_limit is None:
        return []
    alive = [rs for rs in old_sets if not rs["metadata"].get("deletionTimestamp")]
    surplus = len(alive) - rollout.revision_history_limit
    if surplus <= 0:
        return []
    oldest = sorted(alive, key=lambda rs: (revision(rs), rs["metadata"].get("creationTimestamp", "")))
    return [
        rs
        for rs in oldest[:surplus]
        if _status(rs, "replicas") == 0
        and replicas(rs) == 0
        and int(rs["metadata"].get("generation") or 1) <= _status(rs, "observedGeneration")
    ]
