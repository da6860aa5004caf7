"""The bounds on a job's counts (`limits.current()`), checked before anything that costs per replica.

A job of 100,000 replicas is a few hundred bytes, but what it asks for is not: every pod's TF_CONFIG
(MX_CONFIG, WORKER_ADDRS) names every replica, so its pods grow with the square of its count, and even its
Failed status lists its replicas. So every door asks `count_errors` first and stops at an error:
`validation.validate` (and through it the admission webhooks, the API and the Submit page), `render_job`,
the controller's `plan()` (whose `plan.parse_job` reads such a job without its replicas), and the
scale webhook (`scale_errors`). The check reads only the replica specs' `replicas` and the framework's own
counts (`Framework.counts`): it costs as many steps as the job has replica types, whatever the counts say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import limits
from fields import FieldError, as_dict
from jobs.frameworks import Framework
from jobs.spec import job_spec, replica_count


def count_errors(job: object, framework: Framework[Any]) -> list[FieldError]:
    """Each count of `job` past its bound, named by its field as written; empty when every count is within
    its bound (or unreadable: validation reports those)."""
    if not isinstance(job, dict):
        return []
    spec = job_spec(job)
    errors = _replica_errors(spec, framework)
    bounds = limits.current()
    for count in framework.counts(spec):
        if count.value > getattr(bounds, count.limit):
            errors.append(FieldError(count.path, limits.too_many(count.what, count.value, count.limit)))
    return errors


def scale_errors(job: dict[str, Any], framework: Framework[Any], replicas: int) -> list[FieldError]:
    """Why setting the job's Worker replicas to `replicas` would put it past its bound on replicas (empty:
    it would not). A Scale (`kubectl scale`, an autoscaler) writes that field and nothing else."""
    spec = job_spec(job)
    specs = as_dict(spec.get(framework.spec_key))
    scaled = {**specs, "Worker": {**as_dict(specs.get("Worker")), "replicas": replicas}}
    return _replica_errors({**spec, framework.spec_key: scaled}, framework)


def _replica_errors(spec: Mapping[str, Any], framework: Framework[Any]) -> list[FieldError]:
    """The job's replicas (the sum over its replica types, each read as `spec.parse` reads it) past
    `replicas_per_job`: named at the type with the most (the one to lower), the sum spelled out when more
    than one type has replicas."""
    written = _written_counts(spec, framework)
    total = sum(count for _, count in written.values())
    if total <= limits.current().replicas_per_job:
        return []
    key, _ = max(written.values(), key=lambda key_and_count: key_and_count[1])
    message = limits.too_many("replicas", total, "replicas_per_job")
    parts = [f"{replica_type} {count}" for replica_type, (_, count) in written.items() if count > 0]
    if len(parts) > 1:
        message += f" ({' + '.join(parts)})"
    return [FieldError(f"spec.{framework.spec_key}.{key}.replicas", message)]


def _written_counts(spec: Mapping[str, Any], framework: Framework[Any]) -> dict[str, tuple[str, int]]:
    """Canonical replica type → (its key as written, its replicas), in the framework's order; of two keys
    for one type the last counts, as in `spec.replica_specs`."""
    by_type: dict[str, tuple[str, int]] = {}
    for key, given in as_dict(spec.get(framework.spec_key)).items():
        replica_type = framework.canonical_replica_type(key)
        if replica_type is not None and isinstance(given, dict):
            default = framework.default_replicas.get(replica_type, 1)
            by_type[replica_type] = (str(key), replica_count(given, default))
    return {rt: by_type[rt] for rt in framework.replica_types if rt in by_type}
