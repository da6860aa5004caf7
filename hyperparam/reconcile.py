"""The HyperparamWorkflow reconcile: read the sweep and its Workflows, mirror trials, create the next
batches, stop when the sweep must end, and write the status.

Level-triggered and safe to repeat (docs/concurrency.md): Workflow names are deterministic and 409 on create
is success; a batch is created only once every earlier batch it waits for has finished; an adaptive round is
asked once and stored before its Workflow is created. The controller contract is in hyperparam/manifests.py.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from fields import SpecError
from hyperparam import manifests
from hyperparam.batching import BatchPlan
from hyperparam.crd import HYPERPARAM_WORKFLOW
from hyperparam.models import Sweep
from hyperparam.rounds import round_trials
from hyperparam.status import (
    REASON_INVALID_SPEC,
    REASON_LINT_FAILED,
    TERMINAL_PHASES,
    TRIAL_ERRORS_SHOWN,
    BestTrial,
    Observed,
    TrialError,
    desired_status,
)
from hyperparam.sweep import Sweep as SweepSpec
from hyperparam.trials import TrialSummary, read_trials, stop_reason
from hyperparam.trialsync import (
    finished_batches,
    first_failures,
    summarize_stored,
    sync_results,
    sync_workflow,
)
from kube.client import KubeClient, get_client
from kube.conditions import status_changed
from kube.controller.mirror import apply_event
from kube.errors import AlreadyExists, NotFound
from kube.events import EventRecorder, recorder_for
from kube.resources import WORKFLOW, label_selector
from workflows.lint import lint_document

logger = logging.getLogger(__name__)

HPW = HYPERPARAM_WORKFLOW.resource_type
KIND = HPW.kind
# Workflows are large (up to ~640 KiB each once they ran): list a few at a time to bound memory.
WORKFLOW_PAGE_SIZE = 10
# Argo labels a Workflow so once it completed (its own informers filter on it).
COMPLETED_LABEL = "workflows.argoproj.io/completed"
_WORKFLOW_DONE = frozenset({"Succeeded", "Failed", "Error"})


def events() -> EventRecorder:
    return recorder_for("hyperparamworkflow")


def reconcile_hyperparam_workflow(namespace: str, name: str) -> float | None:
    client = get_client()
    try:
        hpw = client.get(HPW, name, namespace)
    except NotFound:
        return None  # deleted: the mirror marks the row, the garbage collector deletes the Workflows
    if hpw["metadata"].get("deletionTimestamp"):
        return None
    Reconcile(client, hpw).run()
    return None


@dataclass
class Batch:
    """One generated Workflow as listed, read or created."""

    index: int
    workflow: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.workflow["metadata"]["name"])

    @property
    def version(self) -> str:
        return str(self.workflow["metadata"].get("resourceVersion") or "")

    @property
    def finished(self) -> bool:
        return (self.workflow.get("status") or {}).get("phase") in _WORKFLOW_DONE


@dataclass
class Children:
    """What one reconcile knows of the sweep's batches.

    A 100,000-trial grid has hundreds of Workflows of up to ~640 KiB each once they ran, so finished ones
    are never listed again: `live` holds the Workflows Argo has not labelled completed; `done` the batches
    whose every trial is stored finished (their Workflow completed, and may since have been deleted by a
    TTL or a garbage collector: they never run again).
    """

    live: dict[int, Batch]
    done: set[int]

    @property
    def existing(self) -> set[int]:
        return set(self.live) | self.done

    @property
    def finished(self) -> set[int]:
        return {index for index, batch in self.live.items() if batch.finished} | self.done

    @property
    def active(self) -> bool:
        return any(not batch.finished for batch in self.live.values())


class Reconcile:
    """One run for one HyperparamWorkflow; every step reads what the previous ones left in `self`."""

    def __init__(self, client: KubeClient, hpw: dict[str, Any]) -> None:
        self.client = client
        self.hpw = hpw
        self.metadata = hpw["metadata"]
        self.previous: dict[str, Any] = hpw.get("status") or {}

    def run(self) -> None:
        row = self._mirror_row()
        try:
            spec = manifests.sweep_of(self.hpw)
            plan = self._plan(spec)
        except SpecError as invalid:
            self._fail_validation(invalid)
            return
        children = self._children(row, spec, plan)
        summary = summarize_stored(row, spec.objective)
        stop = stop_reason(summary, spec)
        error: tuple[str, str] | None = None
        if stop is not None:
            self._stop_running(children, stop)
        else:
            before = len(children.live)
            error = self._create_next(row, spec, plan, children)
            if len(children.live) > before:
                summary = summarize_stored(row, spec.objective)
        observed = Observed(
            planned=plan.trial_count,
            trials_per_batch=plan.trials_per_batch,
            counts=summary.counts,
            best=_best(summary),
            workflows=tuple(
                manifests.workflow_name(self.metadata["name"], i) for i in sorted(children.existing)
            ),
            active=children.active,
            all_batches_created=len(children.existing) >= plan.batch_count,
            stop=stop,
            target=spec.objective.target if spec.objective is not None else None,
            max_failed=spec.max_failed_trials,
            error=error,
            metric=spec.metric,
            trial_errors=_trial_errors(row, summary),
        )
        self._write_status(observed)

    # -- the mirror row --------------------------------------------------------------------------------
    def _mirror_row(self) -> Sweep:
        """The sweep's row; the mirror usually wrote it already, and applying the object again is a no-op."""
        apply_event(Sweep, "MODIFIED", self.hpw)
        return Sweep.objects.get(uid=self.metadata["uid"])

    # -- the plan --------------------------------------------------------------------------------------
    def _plan(self, spec: SweepSpec) -> BatchPlan:
        """The batch split, frozen in status on the first reconcile so a newer estimate never re-slices."""
        frozen = self.previous.get("trialsPerBatch")
        if isinstance(frozen, int) and not isinstance(frozen, bool) and frozen > 0:
            return BatchPlan(spec.trial_count, frozen, spec.parallelism)
        return manifests.plan_batches(self.hpw, spec)

    # -- the children ----------------------------------------------------------------------------------
    def _children(self, row: Sweep, spec: SweepSpec, plan: BatchPlan) -> Children:
        """List the live Workflows, read once each one that completed since the last run, and mirror the
        trials of every Workflow whose resourceVersion changed (in one transaction: one commit)."""
        versions = {str(key): str(value) for key, value in (row.mirrored_batches or {}).items()}
        live = self._list_live()
        done = finished_batches(row, plan, exclude=set(live))
        completed: dict[int, Batch] = {}
        for key in sorted(versions, key=int):
            index = int(key)
            if index in live or index in done:
                continue
            batch = self._read(index)
            if batch is None:
                del versions[key]  # deleted before it finished: the plan creates it again
            else:
                completed[index] = batch
        changed = [
            b for b in (*live.values(), *completed.values()) if versions.get(str(b.index)) != b.version
        ]
        with transaction.atomic():
            written = sum(sync_workflow(row, batch.workflow, spec.metric) for batch in changed)
            versions.update({str(batch.index): batch.version for batch in changed})
            self._save_versions(row, versions)
        if written:
            logger.info("mirrored %d trial updates from %d workflows", written, len(changed))
        for index, batch in completed.items():
            if batch.finished:
                done.add(index)
            else:
                live[index] = batch  # not labelled completed yet: still running
        return Children(live, done)

    def _list_live(self) -> dict[int, Batch]:
        selector = f"{label_selector(manifests.sweep_selector(self.hpw))},{COMPLETED_LABEL}!=true"
        batches: dict[int, Batch] = {}
        for page in self.client.list_pages(
            WORKFLOW, self.metadata["namespace"], label_selector=selector, page_size=WORKFLOW_PAGE_SIZE
        ):
            for workflow in page.get("items") or ():
                label = (workflow["metadata"].get("labels") or {}).get(manifests.LABEL_BATCH, "")
                if label.isdigit():
                    batches[int(label)] = Batch(int(label), workflow)
        return batches

    def _read(self, index: int) -> Batch | None:
        """Batch `index`'s Workflow, if it exists and belongs to this sweep (not to an older namesake)."""
        name = manifests.workflow_name(self.metadata["name"], index)
        try:
            workflow = self.client.get(WORKFLOW, name, self.metadata["namespace"])
        except NotFound:
            return None
        labels = workflow["metadata"].get("labels") or {}
        if any(labels.get(key) != value for key, value in manifests.sweep_selector(self.hpw).items()):
            return None
        return Batch(index, workflow)

    def _save_versions(self, row: Sweep, versions: dict[str, str]) -> None:
        if versions != row.mirrored_batches:
            Sweep.objects.filter(pk=row.pk).update(mirrored_batches=versions)
            row.mirrored_batches = versions

    def _create_next(
        self, row: Sweep, spec: SweepSpec, plan: BatchPlan, children: Children
    ) -> tuple[str, str] | None:
        """Create the batches the plan allows now; a Workflow the linter refuses stops the sweep."""
        versions = dict(row.mirrored_batches or {})
        for index in plan.batches_to_create(children.existing, children.finished):
            workflow = self._build(row, spec, plan, index)
            result = lint_document(workflow)
            if not result.ok:
                name = workflow["metadata"]["name"]
                message = f"workflow {name} fails the lint: " + "; ".join(result.messages)
                events().warning(self.hpw, REASON_LINT_FAILED, message, action="Lint")
                return REASON_LINT_FAILED, message
            batch = Batch(index, self._create(workflow))
            children.live[index] = batch
            sync_results(row, read_trials(batch.workflow, spec.metric))
            versions[str(index)] = batch.version
            self._save_versions(row, versions)
        return None

    def _build(self, row: Sweep, spec: SweepSpec, plan: BatchPlan, index: int) -> dict[str, Any]:
        if spec.algorithm.adaptive:
            trials = [suggestion.planned for suggestion in round_trials(row, spec, plan, index)]
            return manifests.build_workflow(self.hpw, index, trials, sweep=spec, plan=plan)
        return manifests.build_batch(self.hpw, index, sweep=spec, plan=plan)

    def _create(self, workflow: dict[str, Any]) -> dict[str, Any]:
        name = workflow["metadata"]["name"]
        try:
            created = self.client.create(WORKFLOW, workflow)
        except AlreadyExists:
            return self.client.get(WORKFLOW, name, self.metadata["namespace"])
        trials = len(workflow["spec"]["templates"][-1]["steps"][0][0]["withItems"])
        events().normal(
            self.hpw, "SuccessfulCreate", f"Created workflow {name} ({trials} trials)", action="Create"
        )
        return created

    def _stop_running(self, children: Children, reason: str) -> None:
        """Ask Argo to stop the unfinished Workflows (running trials end, no new ones start)."""
        for batch in children.live.values():
            if batch.finished or (batch.workflow.get("spec") or {}).get("shutdown"):
                continue
            try:
                self.client.patch(
                    WORKFLOW, batch.name, {"spec": {"shutdown": "Stop"}}, self.metadata["namespace"]
                )
            except NotFound:
                continue
            events().normal(
                self.hpw, "StoppingWorkflow", f"Stopping workflow {batch.name}: {reason}", action="Stop"
            )

    # -- status ----------------------------------------------------------------------------------------
    def _fail_validation(self, error: SpecError) -> None:
        message = "; ".join(str(field_error) for field_error in error.errors)
        events().warning(self.hpw, "FailedValidation", message, action="Validate")
        self._write_status(Observed(error=(REASON_INVALID_SPEC, message)))

    def _write_status(self, observed: Observed) -> None:
        status = desired_status(
            self.previous, int(self.metadata.get("generation") or 0), observed, timezone.now()
        )
        if not status_changed(self.previous, status):
            return
        patched = self.client.patch_status(HPW, self.metadata["name"], status, self.metadata["namespace"])
        # The cluster's answer is what the watch will deliver too; mirroring it now spares the admin and the
        # API a stale row meanwhile (the watch event then finds the same resourceVersion: a no-op).
        apply_event(Sweep, "MODIFIED", patched)
        before, after = self.previous.get("phase"), status["phase"]
        if before != after and after in TERMINAL_PHASES:
            record = events().normal if after == "Succeeded" else events().warning
            record(self.hpw, after, status["message"], action="Reconcile")


def _trial_errors(row: Sweep, summary: TrialSummary) -> tuple[TrialError, ...]:
    """The first failed trials and why, read only when some failed (one indexed query)."""
    if not summary.failed:
        return ()
    return tuple(
        TrialError(trial.index, trial.phase, trial.message)
        for trial in first_failures(row, TRIAL_ERRORS_SHOWN)
    )


def _best(summary: TrialSummary) -> BestTrial | None:
    trial = summary.best
    if trial is None or trial.metric is None:
        return None
    return BestTrial(trial.index, dict(trial.params), trial.metric, trial.workflow)
