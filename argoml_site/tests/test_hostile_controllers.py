"""Bounded work in every controller: each controller a deployment with every option on registers
(`doors.controller_kinds`) is handed hostile objects of its kind — stored as a tenant's kubectl would store
them, past any webhook (an object written before the webhook existed, or while it was down) — and of the
tenant-writable objects it reads beside its own (a TensorBoard's Workflow and the namespace's artifact
repository, a TrainJob's runtime). One reconcile runs in this process and must end within the budgets of
`hostile.measure` without an error of its own; a count past its bound must leave the object failed with a
condition naming the field and the bound, with nothing created (issue 27)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kube import errors as kube_errors
from kube.client import get_client
from kube.controller.queue.registry import registry as reconcilers
from kube.resources import ResourceType

from .hostile import cluster as hostile_cluster
from .hostile import corpus, doors
from .hostile import names as hostile_names
from .hostile.checks import Answer, Figures, problems
from .hostile.measure import measured

#: How deep the stored objects nest: deeper than anything real and than the bound of the documents we
#: read ourselves (`limits.yaml_depth`), within what this test's client writes (orjson: 254 levels).
STORED_DEPTH = 200
#: The tenant-writable objects a controller reads beside its own kind, and the valid object of its own
#: kind that makes it read them.
SIDE_READS: dict[str, tuple[str, ...]] = {
    "Tensorboard": ("Workflow", "ArtifactRepository"),
    "TrainJob": ("TrainingRuntime",),
}
#: Controllers that build nothing from their object's counts: a runtime's are read by the TrainJobs that
#: use it, which refuse them (`beside: TrainingRuntime`); its own controller keeps the in-use finalizer.
BUILD_NOTHING = ("TrainingRuntime", "ClusterTrainingRuntime")
#: Condition types and reasons that mean "this object is refused".
REFUSALS = ("Failed", "Invalid", "FailedValidation", "InvalidSpec")


def cases() -> Iterator[Any]:
    documents = corpus.documents()
    jobs_seen: set[str] = set()  # every v1 job controller, of either group, runs one reconcile loop
    for door in doors.controller_doors():
        kind = door.key.split(" ", 1)[1]
        seen = jobs_seen if kind.split(".")[0] in doors.JOB_KINDS else set()
        for document, case in corpus.distinct(
            [documents[name] for name in door.documents], text=False, seen=seen
        ):
            yield pytest.param(kind, document.name, case, id=f"{door.key} | {document.name} | {case.id}")
        for name in SIDE_READS.get(kind, ()):
            for case in corpus.cases(documents[name], text=False):
                yield pytest.param(kind, name, case, id=f"{door.key} | beside: {name} | {case.id}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    with hostile_cluster.separate_simulator():
        yield


@pytest.fixture
def figures(hostile_figures: dict[str, Figures]) -> Figures:
    return hostile_figures.setdefault("controllers", Figures("controllers"))


def resource_of(document: dict[str, Any]) -> ResourceType:
    """The resource a document is stored as: every kind here is plural with an `s`."""
    kind = str(document["kind"])
    return ResourceType(
        str(document["apiVersion"]), kind, kind.lower() + "s", namespaced=not kind.startswith("Cluster")
    )


def in_group(document: dict[str, Any], controller_kind: str) -> dict[str, Any]:
    """The document as the controller's group serves it (`TFJob.kubeflow.org` reads kubeflow.org/v1)."""
    if controller_kind.endswith(".kubeflow.org"):
        return {**document, "apiVersion": "kubeflow.org/v1"}
    if controller_kind == "ClusterTrainingRuntime":
        metadata = {key: value for key, value in document["metadata"].items() if key != "namespace"}
        return {**document, "kind": "ClusterTrainingRuntime", "metadata": metadata}
    return document


def store(document: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Create `document` as kubectl would; (the stored object, "") or (None, why the API server refused)."""
    try:
        return get_client().create(resource_of(document), document, document["metadata"].get("namespace")), ""
    except kube_errors.ApiError as error:
        return None, f"{error.status} {error}"
    except TypeError as error:  # an integer past 64 bits: no API server stores one (Kubernetes' are int64)
        return None, str(error)


def own_object(kind: str) -> dict[str, Any]:
    """A valid object of the controller's kind that reads the side objects (a TensorBoard following the
    example's Workflow, a TrainJob on the namespace's runtime)."""
    documents = corpus.documents()
    if kind == "Tensorboard":
        tensorboard = json.loads(json.dumps(documents["Tensorboard"].base))
        tensorboard["spec"]["workflowRef"] = {"kind": "Workflow", "name": "mnist-tb"}
        tensorboard["spec"]["syncSeconds"] = 60
        return tensorboard
    train_job = json.loads(json.dumps(documents["TrainJob"].base))
    train_job["spec"]["runtimeRef"] = {"name": "torch-distributed", "kind": "TrainingRuntime"}
    return train_job


def outcome(stored: dict[str, Any]) -> Answer:
    """The object's status after the reconcile: refused when a condition says it failed or is invalid."""
    current = get_client().get(
        resource_of(stored), stored["metadata"]["name"], stored["metadata"].get("namespace")
    )
    status = current.get("status") or {}
    conditions = [c for c in status.get("conditions") or () if c.get("status") == "True"]
    refused = any(c.get("type") in REFUSALS or c.get("reason") in REFUSALS for c in conditions)
    refused = refused or status.get("phase") in ("Failed", "Error")
    return Answer(0, json.dumps(status), refused=refused)


_namespaces = itertools.count()


def in_namespace(document: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The document in `namespace` (a cluster-scoped one as it is): each case has a namespace of its own,
    so what one case left behind never weighs on the next one's lists."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict) or str(document.get("kind", "")).startswith("Cluster"):
        return document
    return {**document, "metadata": {**metadata, "namespace": namespace}}


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "document", "case"), list(cases()))
def test_every_controller_is_bounded(cluster, figures, kind, document, case):
    side_object = document in SIDE_READS.get(kind, ())
    if kind in BUILD_NOTHING or side_object:
        # A side object a reader refuses (a bomb in the artifact repository) is read as absent, and its
        # reader goes on: what it must not do is spend without bound on it, or fail.
        case = dataclasses.replace(case, must_refuse=False)
    namespace = f"hostile-{next(_namespaces)}"
    hostile_cluster.ensure_namespace(namespace)
    hostile = case.as_object(hostile_names.renamed(case), depth=STORED_DEPTH)
    assert hostile is not None
    if side_object:
        # A side object keeps the name its reader looks for (Argo's `artifact-repositories`).
        hostile = case.as_object(case.base, depth=STORED_DEPTH)
        assert hostile is not None
        stored, _ = store(in_namespace(hostile, namespace))
        if stored is None:
            return  # the API server refused it: no controller ever reads it
        target, why = store(in_namespace(own_object(kind), namespace))
        assert target is not None, why
    else:
        target, _ = store(in_namespace(in_group(hostile, kind), namespace))
        if target is None:
            return
    reconcile = reconcilers.lookup(kind)
    name = target["metadata"]["name"]

    def run() -> Answer:
        try:
            reconcile(target["metadata"].get("namespace") or "", name)
        except Exception as error:  # an error of the controller's own is what this test looks for
            return Answer(0, "", refused=False, error=f"{type(error).__name__}: {error}")
        return outcome(target)

    cost = measured(run)
    figures.record(case.family.value, f"controller {kind}", cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))
