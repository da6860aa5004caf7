"""Every count and size bound Argo-ML puts on what a tenant hands it, in one Django-free table.

Why one place: a bound that lives beside one parser is missed by the next door to the same work (the
webhook, the API, the Submit page, `render_job` and the controller all plan a job). Each door asks
`current()` at the moment it checks, so a deployment's setting (`MAX_<FIELD>` in the environment, read by
`argoml_site/settings.py`, which calls `configure`) reaches every door, and the pure cores (`jobs`,
`trainer`, `hyperparam`, `workflows`) need no Django to read it. docs/security.md lists every field with
its default and why; a test keeps that table and this class in step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """The bounds; each default is far past what a real cluster's workload needs, and far below what would
    take a 2-core, 24 GB control plane down. The environment variable of a field is `MAX_<FIELD>` upper-cased
    (`setting_name`)."""

    #: Pods of one training job: the sum of `replicas` over its replica types (Kubeflow v1 kinds), a
    #: TrainJob's `numNodes`, a PyTorchJob's elastic `maxReplicas`. Each pod's TF_CONFIG names every
    #: replica, so a job's planned size grows with the square of this.
    replicas_per_job: int = 1000
    #: Processes in one pod: an MPIJob's `slotsPerWorker`, a TrainJob's `numProcPerNode`, a PyTorchJob's
    #: `nprocPerNode` (the largest nodes have a few hundred cores and 8-16 accelerators).
    processes_per_node: int = 1024
    #: Trials one sweep may run: a grid's combinations, a search's trial budget.
    trials_per_sweep: int = 100_000
    #: Trials of one sweep running at once (`parallelism`): each is at least one pod. Also bounds the
    #: `parallelism` a sweep's embedded Argo workflow sets (pods at once within a batch).
    parallel_trials: int = 1000
    #: Workflows one sweep creates: its batches, or the rounds of an adaptive search (one each). The
    #: sweep's status names every one (up to 63 characters each) and must stay well under 1 MiB; each
    #: adaptive round also rebuilds the sampler's study from every earlier trial.
    workflows_per_sweep: int = 5000
    #: Items one pipeline `map` step fans out to (each item is a step, a pod, of the Workflow), counting
    #: the maps around it; and the items of a loop (`withItems`, `withSequence`) of a sweep's workflow.
    map_items: int = 10_000
    #: The JSON of one Workflow a pipeline transpiles to. etcd stores objects up to 1.5 MiB by default and
    #: Argo writes each node's status into the same object as it runs, so a larger spec could not run; and
    #: each step's template repeats the configuration's secrets and the items of the maps around it, so the
    #: Workflow can grow much faster than the pipeline (its YAML costs about 20x its size to write).
    workflow_bytes: int = 1024 * 1024
    #: A YAML or JSON text a tenant hands us, in bytes (UTF-8).
    yaml_bytes: int = 4 * 1024 * 1024
    #: Scalars, mappings, sequences and aliases in one YAML text.
    yaml_values: int = 500_000
    #: Mappings and sequences nested in one another.
    yaml_depth: int = 100
    #: The text of a YAML document's scalars once every alias is written out in full: what a reader (or a
    #: serialiser) of the loaded tree handles, whatever the text's size.
    yaml_expanded_bytes: int = 4 * 1024 * 1024
    #: One HTTP response body of the web process or the webhook listener, in bytes: a backstop behind the
    #: bounds above, so no answer we build can grow past it.
    response_bytes: int = 32 * 1024 * 1024
    #: One answer the TensorBoard proxy (`/tensorboards/<namespace>/<name>/…`, the dev stack's way to a
    #: TensorBoard) passes from a TensorBoard pod to a browser, in bytes. Streamed, so it costs the web
    #: process one chunk at a time; the bound keeps one request from holding a web thread without end.
    #: TensorBoard's largest answers (a run's images or audio, a big histogram) are a few MiB.
    tensorboard_proxy_bytes: int = 256 * 1024 * 1024
    #: Seconds one request through the TensorBoard proxy may take, from the request to the answer's last
    #: byte (TensorBoard answers in well under a second; a slow first load reads event files for seconds).
    tensorboard_proxy_seconds: int = 120

    @staticmethod
    def setting_name(field: str) -> str:
        """The environment variable (and Django setting) that overrides `field`."""
        return f"MAX_{field.upper()}"


#: The most problems one answer lists; it counts the rest. A spec of 50,000 duplicate values (or a
#: manifest the API server refuses for 50,000 fields) must not become an answer of 50,000 problems (80 MiB
#: in the web process), and the first hundred say what to fix. A constant: no one needs more to act on.
PROBLEMS_LISTED = 100

DEFAULTS = Limits()
_current = DEFAULTS


def current() -> Limits:
    """The bounds this process enforces (the defaults until `configure` runs)."""
    return _current


def configure(limits: Limits) -> None:
    """Make `limits` the process's bounds (settings do it once, at start-up)."""
    global _current  # the one process-wide value, as Django's settings are
    _current = limits


@contextmanager
def overridden(**changes: int) -> Iterator[Limits]:
    """Tests: the bounds with `changes` applied, for the duration of the block."""
    before = current()
    configure(dataclasses.replace(before, **changes))
    try:
        yield current()
    finally:
        configure(before)


def fields() -> tuple[str, ...]:
    """Every bound's field name, in the table's order."""
    return tuple(field.name for field in dataclasses.fields(Limits))


def too_many(what: str, count: int, field: str) -> str:
    """The one wording of "this count is past its bound", for a `FieldError`-style message whose path names
    the field: `must be at most 1000 replicas (MAX_REPLICAS_PER_JOB), not 100000`."""
    limit = getattr(current(), field)
    return f"must be at most {limit} {what} ({Limits.setting_name(field)}), not {count}"
