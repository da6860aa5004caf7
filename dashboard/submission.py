"""Submit a resource pasted or uploaded as YAML: parse it, check it with the rules the admission webhook
applies, preview what it will create (the pods of a job, the Workflows of a sweep) and create it in the
cluster through each app's actions. The page only calls these; nothing here writes the database."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from dashboard.cluster import cluster_client
from fields import SpecError
from hyperparam import actions as sweep_actions
from hyperparam import manifests as sweep_manifests
from hyperparam.adaptive import ask_round
from jobs import actions as job_actions
from jobs import manifests as job_manifests
from jobs import spec as jobspec
from jobs.conf import cluster_domain
from jobs.frameworks import framework_for, kinds
from kube import names
from kube.errors import AlreadyExists, ApiError, Invalid
from tensorboard import actions as tensorboard_actions
from tensorboard.conf import conf_from_settings
from tensorboard.errors import SpawnError
from workflows import safeyaml

SWEEP_KIND = sweep_manifests.KIND
TENSORBOARD_KIND = "Tensorboard"
# One resource is far smaller than the API's documents: a tighter budget for what the page will expand
# (the text itself is bounded by MAX_UPLOAD_BYTES before it gets here).
MANIFEST_LIMITS = safeyaml.Limits(max_nodes=100_000, max_depth=64)
# Workflows of a sweep listed by name in a preview.
PREVIEW_LISTED = 50
# Replicas of each type of a job listed in a preview (the rest are counted), and shown in full as YAML.
PREVIEW_PER_TYPE = 3
PREVIEW_RENDERED_PER_TYPE = 1


def submittable_kinds() -> list[str]:
    return [*kinds(), SWEEP_KIND, TENSORBOARD_KIND]


@dataclass(frozen=True)
class Problem:
    """What is wrong, and where: `path` is the field as the user wrote it (empty: the whole document)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class Rejected(ValueError):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(map(str, problems)))
        self.problems = problems


@dataclass(frozen=True)
class Child:
    kind: str
    name: str
    detail: str


@dataclass(frozen=True)
class Preview:
    kind: str
    namespace: str
    name: str
    summary: str
    children: list[Child] = field(default_factory=list)
    rendered: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Created:
    kind: str
    namespace: str
    name: str
    note: str = ""


# -- reading ---------------------------------------------------------------------------------------
def parse(text: str) -> dict[str, Any]:
    """The one resource in `text`, or Rejected saying why it is not one."""
    try:
        documents = safeyaml.load_documents(text, MANIFEST_LIMITS)
    except safeyaml.YamlRefused as error:
        raise Rejected([Problem("", str(error))]) from None
    if not documents:
        raise Rejected([Problem("", "the manifest is empty: paste or upload one resource")])
    if len(documents) > 1:
        raise Rejected([Problem("", f"found {len(documents)} documents: submit one resource at a time")])
    manifest = documents[0]
    if not isinstance(manifest, dict):
        raise Rejected([Problem("", f"a resource is a mapping, not a {type(manifest).__name__}")])
    if manifest.get("kind") not in submittable_kinds():
        allowed = ", ".join(submittable_kinds())
        raise Rejected([Problem("kind", f"must be one of {allowed}, not {manifest.get('kind')!r}")])
    return manifest


def identity(manifest: dict[str, Any]) -> tuple[str, str, str]:
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return str(manifest.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


# -- checking (the webhook's rules) ----------------------------------------------------------------
def check(manifest: dict[str, Any]) -> list[Problem]:
    kind = manifest.get("kind")
    if kind == SWEEP_KIND:
        problems = [Problem(e.path, e.message) for e in sweep_actions.check_manifest(manifest)]
    elif kind == TENSORBOARD_KIND:
        problems = _check_tensorboard(manifest)
    else:
        problems = [Problem(e.path, e.message) for e in job_actions.check_manifest(manifest)]
    return _name_problems(manifest) + problems


def _name_problems(manifest: dict[str, Any]) -> list[Problem]:
    """The namespace and name given are valid Kubernetes names (required ones are each kind's to demand)."""
    kind, namespace, name = identity(manifest)
    problems = (
        [Problem("metadata.namespace", p) for p in names.namespace_problems(namespace)] if namespace else []
    )
    if name:
        problems += [Problem("metadata.name", p) for p in names.name_problems(kind, name)]
    return problems


def _check_tensorboard(manifest: dict[str, Any]) -> list[Problem]:
    """A TensorBoard is opened for a source (spec.workflowRef) or for logdirs an administrator allowed."""
    _, namespace, name = identity(manifest)
    problems = [] if namespace else [Problem("metadata.namespace", "is required")]
    spec = manifest.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    reference = spec.get("workflowRef")
    logdirs = spec.get("logdirs")
    if isinstance(reference, dict):
        kind = reference.get("kind") or "Workflow"
        if kind not in tensorboard_actions.SOURCE_KINDS:
            allowed = ", ".join(sorted(tensorboard_actions.SOURCE_KINDS))
            problems.append(Problem("spec.workflowRef.kind", f"must be one of {allowed}, not {kind!r}"))
        source = reference.get("name")
        if not source:
            problems.append(Problem("spec.workflowRef.name", "is required"))
        else:
            # The source's name goes into the path the spawner reads it from (issue 16).
            found = (
                names.name_problems(str(kind), source) if isinstance(source, str) else ["must be a string"]
            )
            problems += [Problem("spec.workflowRef.name", problem) for problem in found]
    elif isinstance(logdirs, list) and logdirs:
        if not name:
            problems.append(Problem("metadata.name", "is required when logdirs are named directly"))
        for position, entry in enumerate(logdirs):
            if not isinstance(entry, dict) or not entry.get("name") or not entry.get("path"):
                problems.append(Problem(f"spec.logdirs[{position}]", "needs a name and a path"))
    else:
        problems.append(Problem("spec", "needs workflowRef (a workflow, sweep or job) or logdirs"))
    return problems


# -- previewing (the controllers' render logic) ----------------------------------------------------
def preview(manifest: dict[str, Any]) -> Preview:
    """What creating the (valid) resource will make: the controllers' own builders, nothing sent."""
    kind, namespace, name = identity(manifest)
    if kind == SWEEP_KIND:
        return _sweep_preview(manifest)
    if kind == TENSORBOARD_KIND:
        reference = manifest["spec"].get("workflowRef")
        if isinstance(reference, dict):
            source = f"{reference.get('kind') or 'Workflow'} {reference['name']}"
            summary = f"A TensorBoard of every `tensorboard` artifact {source} recorded, in {namespace}."
        else:
            summary = f"A TensorBoard {name} of {len(manifest['spec']['logdirs'])} logdir(s) in {namespace}."
        return Preview(kind, namespace, name, summary)
    return _job_preview(manifest)


def _job_preview(manifest: dict[str, Any]) -> Preview:
    """The first replicas of each type, built by the controller's builders, and a row that counts the rest:
    every pod of a job at its bound (1000 replicas) would be 1000 TF_CONFIGs naming 1000 replicas each,
    30 MB to build and far more to render, for pods that differ only by their index. The job was checked
    first, so its counts are within their bounds."""
    kind, namespace, name = identity(manifest)
    framework = framework_for(kind, cluster_domain=cluster_domain())
    job = jobspec.parse(manifest, framework)
    own_services = [
        _child(m) for m in job_manifests.extra_children(job, framework, []) if m["kind"] == "Service"
    ]
    services: list[Child] = []
    pods: list[Child] = []
    rendered: list[dict[str, Any]] = []
    for replica_type, replica in job.replicas.items():
        shown = [jobspec.Slot(replica_type, i) for i in range(min(replica.replicas, PREVIEW_PER_TYPE))]
        hidden = _hidden(job, replica_type, len(shown), replica.replicas)
        built = [job_manifests.build_pod(job, framework, slot) for slot in shown]
        pods += [_child(pod) for pod in built] + [Child("Pod", *row) for row in hidden]
        rendered += built[:PREVIEW_RENDERED_PER_TYPE]
        if framework.replica_services:
            services += [_child(job_manifests.build_service(job, framework, slot)) for slot in shown]
            services += [Child("Service", *row) for row in hidden]
    pod_count = sum(job.counts.values())
    service_count = len(own_services) + (pod_count if framework.replica_services else 0)
    summary = f"{pod_count} pod(s) and {service_count} headless service(s)."
    return Preview(kind, namespace, name, summary, own_services + services + pods, rendered)


def _hidden(job: jobspec.JobSpec[Any], replica_type: str, shown: int, replicas: int) -> list[tuple[str, str]]:
    """The (names, detail) row of a type's replicas past the first `shown`, or none."""
    if replicas <= shown:
        return []
    first, last = job.host(replica_type, shown), job.host(replica_type, replicas - 1)
    names = first if replicas - shown == 1 else f"{first} … {last}"
    return [(names, f"{replicas - shown} more, as {job.host(replica_type, 0)} but for their index")]


def _child(manifest: dict[str, Any]) -> Child:
    return Child(manifest["kind"], manifest["metadata"]["name"], _child_detail(manifest))


def _child_detail(child: dict[str, Any]) -> str:
    if child["kind"] != "Pod":
        ports = child.get("spec", {}).get("ports") or []
        return ", ".join(f"port {p.get('port')}" for p in ports)
    containers = child.get("spec", {}).get("containers") or []
    parts = []
    for container in containers:
        env = [str(e.get("name")) for e in container.get("env") or [] if isinstance(e, dict)]
        parts.append(f"{container.get('name')}: {container.get('image')} (env {', '.join(env) or 'none'})")
    return "; ".join(parts)


def _sweep_preview(manifest: dict[str, Any]) -> Preview:
    kind, namespace, name = identity(manifest)
    sweep = sweep_manifests.sweep_of(manifest)
    plan = sweep_manifests.plan_batches(manifest, sweep)
    if sweep.algorithm.adaptive:
        first_round = ask_round(sweep, 0, plan.batch_trials(0), [], {})
        trials = [suggestion.planned for suggestion in first_round.suggestions]
        first = sweep_manifests.build_workflow(manifest, 0, trials, sweep=sweep, plan=plan)
        note = " Later rounds depend on the results of earlier ones."
    else:
        first = sweep_manifests.build_batch(manifest, 0, sweep=sweep, plan=plan)
        note = ""
    summary = (
        f"{sweep.trial_count} trial(s) ({sweep.algorithm.name}) in {plan.batch_count} Workflow(s) of up to "
        f"{plan.trials_per_batch} trials, {plan.concurrent_batches} at a time.{note}"
    )
    listed = [
        Child("Workflow", sweep_manifests.workflow_name(name, index), _batch_detail(plan.batch_trials(index)))
        for index in range(min(plan.batch_count, PREVIEW_LISTED))
    ]
    return Preview(kind, namespace, name, summary, listed, [first])


def _batch_detail(trials: range) -> str:
    return f"trials {trials.start} to {trials.stop - 1}" if len(trials) > 1 else f"trial {trials.start}"


# -- creating (each app's actions) -----------------------------------------------------------------
def create(manifest: dict[str, Any]) -> Created:
    """Create the resource in the cluster; Rejected with the cluster's or the action's words otherwise."""
    kind, namespace, name = identity(manifest)
    try:
        cluster_client()
        if kind == SWEEP_KIND:
            sweep_actions.submit_sweep(manifest)
        elif kind == TENSORBOARD_KIND:
            return _spawn(manifest)
        else:
            job_actions.submit_job(manifest)
    except (job_actions.JobRejected, sweep_actions.SweepRejected) as rejected:
        raise Rejected([Problem(e.path, e.message) for e in rejected.errors]) from None
    except AlreadyExists as error:
        raise Rejected([Problem("metadata.name", str(error))]) from None
    except Invalid as error:
        causes = [Problem(c.get("field") or "", str(c.get("message") or "")) for c in error.causes]
        raise Rejected(causes or [Problem("", str(error))]) from None
    except SpecError as error:
        raise Rejected([Problem(e.path, e.message) for e in error.errors]) from None
    except ApiError as error:
        raise Rejected([Problem("", f"the cluster did not accept it: {error}")]) from None
    return Created(kind, namespace, name)


def _spawn(manifest: dict[str, Any]) -> Created:
    _, namespace, name = identity(manifest)
    spec = manifest["spec"]
    conf = conf_from_settings()
    try:
        reference = spec.get("workflowRef")
        if isinstance(reference, dict):
            spawned = tensorboard_actions.spawn(
                cluster_client(),
                conf,
                namespace=namespace,
                kind=reference.get("kind") or "Workflow",
                source=reference["name"],
                now=timezone.now(),
            )
        else:
            spawned = tensorboard_actions.spawn_logdirs(
                cluster_client(),
                conf,
                namespace=namespace,
                name=name,
                entries=spec["logdirs"],
                now=timezone.now(),
            )
    except SpawnError as error:
        raise Rejected([Problem("spec", error.message)]) from None
    except ApiError as error:
        raise Rejected([Problem("", f"the cluster did not accept it: {error}")]) from None
    created_name = spawned.tensorboard["metadata"]["name"]
    return Created(TENSORBOARD_KIND, namespace, created_name, "; ".join(spawned.warnings))
