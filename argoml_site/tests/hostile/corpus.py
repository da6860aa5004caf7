"""The hostile inputs: every kind of document a tenant hands us, and what a hostile tenant does to each.

A document is a valid input of one kind (the repository's own examples, which `test_examples.py` proves
valid), with the schema its fields are declared in: the kind's CRD (`deploy/crds/`), the API's request
component, or, for the two texts with no schema (a pipeline and the artifact repository), a short list
written here. Its *sites* — every field under `spec` and the free-form parts of `metadata` — are found by
walking that schema, so a field added to a CRD is attacked the day it is added. Each site gets the values
of its type's families: past-the-bound and absurd counts on integers (each integer is classified in
`INTEGERS`: the bound that limits it, or why a large value costs nothing; an unclassified one fails the
suite), megabyte strings, a hundred thousand keys or items, out-of-range numbers and dates, wrong types,
and nesting a hundred thousand deep where the schema lets anything in. Texts (YAML) also get the alias
bombs.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import enum
import json
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

import limits

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
CRDS = REPO / "deploy" / "crds"

#: How big "huge" is. Each is a small text (well under the 2.5 MB body limit) that would be a lot of work
#: for anything that expands it.
LONG_STRING = 300_000
MANY = 20_000
DEEP = 100_000
ABSURD_COUNT = 10**9
COMPRESSED_BYTES = 256 * 1024 * 1024
OUT_OF_RANGE_INTEGERS = (2**70, -1)
OUT_OF_RANGE_DATES = ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00")
#: The placeholder a nested value is written in place of, once the document is text.
_NESTED = "\x00nested\x00"
#: The placeholder of a number past a double's range: `1e999` in the text (JSON has no Infinity; a reader
#: of `1e999` gets one), null once our own client writes the object (orjson writes no infinity).
_HUGE_FLOAT = "\x00huge-float\x00"


class Family(enum.Enum):
    """What a hostile tenant does to a document."""

    SCALAR_ALIAS_BOMB = "scalar-alias-bomb"  # one anchored string, referenced a hundred thousand times
    COLLECTION_ALIAS_BOMB = "collection-alias-bomb"  # billion laughs
    DEEP_NESTING = "deep-nesting"
    HUGE_COUNT = "huge-count"  # a count one past its bound, and an absurd one
    LONG_STRING = "long-string"
    MANY_KEYS = "many-keys"
    MANY_ITEMS = "many-items"
    OUT_OF_RANGE_NUMBER = "out-of-range-number"
    OUT_OF_RANGE_DATE = "out-of-range-date"
    WRONG_TYPE = "wrong-type"
    COMPRESSION_BOMB = "compression-bomb"  # a few hundred kilobytes of gzip that inflate to 256 MiB


class SiteType(enum.Enum):
    INTEGER = "integer"
    NUMBER = "number"
    STRING = "string"
    DATE = "date-time"
    BOOLEAN = "boolean"
    MAP = "map"
    ARRAY = "array"
    FREE = "free"  # x-kubernetes-preserve-unknown-fields: anything goes in
    COMPRESSED = "gzip-base64"  # a string holding gzipped JSON (an Argo Workflow's compressedNodes)


@dataclass(frozen=True)
class Site:
    """A field of a document: its schema pattern (`.spec.tfReplicaSpecs.*.replicas`) and where it is in
    this document (`("spec", "tfReplicaSpecs", "Worker", "replicas")`)."""

    pattern: str
    path: tuple[str | int, ...]
    type: SiteType

    @property
    def dotted(self) -> str:
        text = ""
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else f".{part}"
        return text.lstrip(".")


# Every integer field of every document, by schema pattern (`*` matches one path segment): the `limits`
# field that bounds it, or None and why a large value costs no work.
INTEGERS: dict[str, str | None] = {
    # Kubeflow v1 training jobs.
    ".spec.*ReplicaSpecs.*.replicas": "replicas_per_job",
    ".spec.elasticPolicy.minReplicas": "replicas_per_job",
    ".spec.elasticPolicy.maxReplicas": "replicas_per_job",
    ".spec.elasticPolicy.nProcPerNode": "processes_per_node",
    ".spec.nprocPerNode": "processes_per_node",
    ".spec.slotsPerWorker": "processes_per_node",
    ".spec.elasticPolicy.rdzvPort": None,  # a port number: a range check, no work
    ".spec.elasticPolicy.maxRestarts": None,  # a threshold compared with a counter
    ".spec.runPolicy.ttlSecondsAfterFinished": None,  # durations: compared with the clock
    ".spec.runPolicy.activeDeadlineSeconds": None,
    ".spec.runPolicy.backoffLimit": None,  # a threshold
    ".spec.runPolicy.schedulingPolicy.minAvailable": None,  # written into one PodGroup field
    ".spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds": None,
    # Sweeps.
    ".spec.parallelism": "parallel_trials",
    ".spec.maxTrials": "trials_per_sweep",
    ".spec.maxFailedTrials": None,  # a threshold
    ".spec.hyperparams[].int.min": "trials_per_sweep",  # the ends and step decide the grid's size
    ".spec.hyperparams[].int.max": "trials_per_sweep",
    ".spec.hyperparams[].int.step": None,  # a larger step makes fewer values
    # TensorBoards.
    ".spec.syncSeconds": None,
    # TrainJobs.
    ".spec.trainer.numNodes": "replicas_per_job",
    ".spec.trainer.numProcPerNode": "processes_per_node",
    ".spec.activeDeadlineSeconds": None,
    ".spec.trainer.resourcesPerNode.*.*": None,  # quantities handed to the scheduler, not counted by us
    ".spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec"
    ".terminationGracePeriodSeconds": None,
    # Trainer's runtimes: a TrainJob's numNodes and numProcPerNode default from them.
    ".spec.mlPolicy.numNodes": "replicas_per_job",
    ".spec.mlPolicy.*.numProcPerNode": "processes_per_node",
    ".spec.template.spec.replicatedJobs[].replicas": "replicas_per_job",  # JobSet's copies of a step
    ".spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds": None,
    # TrainJob progress reports (trainerStatus).
    ".trainerStatus.progressPercentage": None,  # 0-100, a range check
    ".trainerStatus.estimatedRemainingSeconds": None,
}


def integer_bound(pattern: str) -> str | None:
    """The `limits` field bounding the integer at `pattern`, None for one that costs nothing; KeyError for
    an integer nobody has classified."""
    for known, bound in INTEGERS.items():
        if re.fullmatch(re.escape(known).replace(r"\*", r"[^.]*"), pattern):
            return bound
    raise KeyError(pattern)


@dataclass(frozen=True)
class Document:
    """A valid input of one kind and the schema of its fields."""

    name: str
    base: Mapping[str, Any]
    schema: Mapping[str, Any]
    #: Where the fields are: `spec` for a custom resource, the top for a request body.
    root: str = "spec"
    #: Documents held inside this one (a review's object, a request's pipeline): (where, document).
    embeds: tuple[tuple[tuple[str | int, ...], Document], ...] = ()
    #: Fields that may hold a YAML text instead of an object (a pipeline request's `pipeline`, a
    #: ConfigMap's value).
    yaml_fields: tuple[tuple[str, ...], ...] = ()

    def sites(self) -> list[Site]:
        found = list(_walk(self.schema, dict(self.base), (), ""))
        if "metadata" in self.base:
            found += [
                Site(".metadata.name", ("metadata", "name"), SiteType.STRING),
                Site(".metadata.labels", ("metadata", "labels"), SiteType.MAP),
                Site(".metadata.annotations", ("metadata", "annotations"), SiteType.MAP),
            ]
        return found


def _walk(schema: Mapping[str, Any], base: Any, path: tuple[str | int, ...], pattern: str) -> Iterator[Site]:
    """The sites under `schema`, resolved against the document `base` (map keys and list items come from
    the document: a site under a list or map the document does not have is not reachable, and the list or
    map itself is the site)."""
    if schema.get("x-kubernetes-int-or-string"):
        yield Site(pattern, path, SiteType.INTEGER)
        return
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        yield Site(pattern, path, SiteType.FREE)
        return
    kind = schema.get("type")
    if kind in ("integer", "number", "boolean"):
        yield Site(pattern, path, SiteType(kind))
    elif kind == "string":
        formats = {"date-time": SiteType.DATE, "gzip-base64": SiteType.COMPRESSED}
        yield Site(pattern, path, formats.get(schema.get("format", ""), SiteType.STRING))
    elif kind == "array":
        yield Site(pattern, path, SiteType.ARRAY)
        if isinstance(base, list) and base:
            yield from _walk(schema.get("items") or {}, base[0], (*path, 0), pattern + "[]")
    elif kind == "object" or "properties" in schema:
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            yield Site(pattern, path, SiteType.MAP)
            for key, value in (base if isinstance(base, dict) else {}).items():
                yield from _walk(values, value, (*path, key), pattern + ".*")
        for key, child in (schema.get("properties") or {}).items():
            yield from _walk(
                child,
                (base or {}).get(key) if isinstance(base, dict) else None,
                (*path, key),
                f"{pattern}.{key}",
            )


@dataclass(frozen=True)
class Case:
    """One hostile input, built when it is sent (a corpus of megabyte strings and 50,000-key maps would
    not fit in memory at once): `value()` placed at `path` of `base`, or a YAML text built by hand; what
    the door must do with it, and the words a refusal must contain."""

    id: str
    family: Family
    base: Mapping[str, Any] | None = None
    path: tuple[str | int, ...] = ()
    value: Callable[[], Any] | None = None
    yaml_text: Callable[[], str] | None = None  # when only a YAML text can say it (aliases)
    must_refuse: bool = False
    names: tuple[str, ...] = ()  # a refusal names the field: one of these must be in the answer
    nested: bool = False  # the value is the nesting placeholder
    #: What the case attacks, whatever the document: its family, schema pattern and value. Documents of
    #: kinds that share a field (every v1 job's runPolicy) share the case's key.
    key: str = ""

    def document(self, base: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The hostile document (on `base` instead of the case's own, e.g. renamed); None for a text."""
        base = base if base is not None else self.base
        if base is None or self.value is None:
            return None
        return _with(base, self.path, self.value())

    def as_json(self, base: Mapping[str, Any] | None = None, depth: int = DEEP) -> str | None:
        document = self.document(base)
        if document is None:
            return None
        text = json.dumps(document).replace(json.dumps(_HUGE_FLOAT), "1e999")
        return text.replace(json.dumps(_NESTED), "[" * depth + "]" * depth) if self.nested else text

    def as_yaml(self, base: Mapping[str, Any] | None = None) -> str:
        return self.yaml_text() if self.yaml_text is not None else (self.as_json(base) or "")

    def as_object(self, base: Mapping[str, Any] | None = None, depth: int = DEEP) -> dict[str, Any] | None:
        """The document as an object, nested `depth` deep."""
        text = self.as_json(base, depth)
        return None if text is None else json.loads(text)


def _with(document: Mapping[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A copy of `document` with `value` at `path` (missing mappings on the way are created)."""
    changed = copy.deepcopy(dict(document))
    node: Any = changed
    for part in path[:-1]:
        if isinstance(part, int):
            node = node[part]
        else:
            if not isinstance(node.get(part), (dict, list)):
                node[part] = {}
            node = node[part]
    node[path[-1]] = value
    return changed


def _shared(pattern: str) -> str:
    """A pattern as every kind has it: `.spec.tfReplicaSpecs.*.template` and `.spec.mxReplicaSpecs.*.template`
    are one field of one shared parser."""
    return re.sub(r"^\.spec\.\w+ReplicaSpecs", ".spec.*ReplicaSpecs", pattern)


def distinct(
    documents: list[Document], *, text: bool, seen: set[str] | None = None
) -> Iterator[tuple[Document, Case]]:
    """The cases of several documents read by one door (or by doors sharing one parser: pass them one
    `seen`), each shared field attacked once, with the first document that has it — except counts: each
    kind's bounds and replica types are its own."""
    seen = set() if seen is None else seen
    for document in documents:
        for case in cases(document, text=text):
            if case.family is not Family.HUGE_COUNT and case.key:
                if case.key in seen:
                    continue
                seen.add(case.key)
            yield document, case


def _path_names(site: Site) -> tuple[str, ...]:
    """How an answer may name the site: its path in either notation, its first two segments (a grid's
    size is the sweep's `spec.hyperparams`, not one end of one range), or its own key as a reader that
    places its problems itself words it (`step prepare: parallelism: ...`)."""
    dots = ".".join(str(part) for part in site.path)
    names = {site.dotted, dots}
    if len(site.path) >= 2:
        names.add(".".join(str(part) for part in site.path[:2]))
    keys = [part for part in site.path if isinstance(part, str)]
    if keys:
        names.add(keys[-1])
    return tuple(sorted(names))


#: A nesting past the depth bound is refused before any field is read: the answer names the bound.
NESTING_NAMES = ("levels deep",)


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def cases(document: Document, *, text: bool) -> list[Case]:
    """Every hostile case of `document`: its sites' families, nesting under its root, the cases of the
    documents it embeds (placed where it holds them), and the alias bombs when the door reads a YAML
    `text` or the document has fields that hold one."""
    found: list[Case] = []
    for site in document.sites():
        found += _site_cases(document, site)
    where = (document.root, "hostileNesting") if document.root else ("hostileNesting",)
    found.append(
        Case(
            f"{Family.DEEP_NESTING.value} {'.'.join(where)}",
            Family.DEEP_NESTING,
            document.base,
            where,
            _constant(_NESTED),
            names=NESTING_NAMES,
            nested=True,
        )
    )
    for path, inner in document.embeds:
        found += [_embedded(document, path, case) for case in cases(inner, text=False)]
    if text:
        found += _alias_bombs(document)
    for path in document.yaml_fields:
        found += _alias_bombs_in_field(document, path)
    return found


def _embedded(outer: Document, path: tuple[str | int, ...], case: Case) -> Case:
    """An inner document's case, inside the outer document (which holds the inner base at `path`)."""
    return dataclasses.replace(
        case, id=f"{case.id} in {'.'.join(map(str, path))}", base=outer.base, path=(*path, *case.path)
    )


def _site_cases(document: Document, site: Site) -> list[Case]:
    names = _path_names(site)
    made: list[Case] = []

    def add(family: Family, value: Callable[[], Any], label: str, **options: Any) -> None:
        made.append(
            Case(
                f"{family.value} {site.dotted}={label}",
                family,
                document.base,
                site.path,
                value,
                names=names,
                key=f"{family.value} {_shared(site.pattern)}={label}",
                **options,
            )
        )

    if site.type is SiteType.INTEGER:
        bound = integer_bound(site.pattern)
        if bound is not None:
            limit = getattr(limits.current(), bound)
            add(Family.HUGE_COUNT, _constant(limit + 1), "limit+1", must_refuse=True)
            add(Family.HUGE_COUNT, _constant(ABSURD_COUNT), "1e9", must_refuse=True)
        for number in OUT_OF_RANGE_INTEGERS:
            add(Family.OUT_OF_RANGE_NUMBER, _constant(number), str(number))
        add(Family.WRONG_TYPE, _constant("many"), "string")
    elif site.type is SiteType.NUMBER:
        add(Family.OUT_OF_RANGE_NUMBER, _constant(_HUGE_FLOAT), "1e999")
        add(Family.WRONG_TYPE, _constant("many"), "string")
    elif site.type is SiteType.STRING:
        add(Family.LONG_STRING, lambda: "x" * LONG_STRING, f"{LONG_STRING}-chars")
        add(Family.WRONG_TYPE, lambda: {"a": ["b"]}, "mapping")
    elif site.type is SiteType.DATE:
        for date in OUT_OF_RANGE_DATES:
            add(Family.OUT_OF_RANGE_DATE, _constant(date), date)
        add(Family.WRONG_TYPE, _constant(17), "number")
    elif site.type is SiteType.BOOLEAN:
        add(Family.WRONG_TYPE, _constant("yes please"), "string")
    elif site.type is SiteType.MAP:
        # A reader that reports each key on its own names the keys: `step k0: ...`.
        made.append(
            Case(
                f"{Family.MANY_KEYS.value} {site.dotted}={MANY}-keys",
                Family.MANY_KEYS,
                document.base,
                site.path,
                lambda: {f"k{i}": "v" for i in range(MANY)},
                names=(*names, "k0"),
                key=f"{Family.MANY_KEYS.value} {_shared(site.pattern)}",
            )
        )
        add(Family.WRONG_TYPE, lambda: ["a"], "list")
    elif site.type is SiteType.ARRAY:
        add(Family.MANY_ITEMS, lambda: ["x"] * MANY, f"{MANY}-items")
        add(Family.WRONG_TYPE, _constant("a"), "string")
    elif site.type is SiteType.COMPRESSED:
        add(Family.COMPRESSION_BOMB, _gzip_bomb, f"{COMPRESSED_BYTES >> 20}-MiB-gzipped")
        add(Family.WRONG_TYPE, _constant(17), "number")
    elif site.type is SiteType.FREE:
        made.append(
            Case(
                f"{Family.DEEP_NESTING.value} {site.dotted}={DEEP}-deep",
                Family.DEEP_NESTING,
                document.base,
                site.path,
                _constant(_NESTED),
                names=names + NESTING_NAMES,
                nested=True,
                key=f"{Family.DEEP_NESTING.value} {_shared(site.pattern)}",
            )
        )
    return made


def _alias_bombs_in_field(document: Document, path: tuple[str, ...]) -> list[Case]:
    """The alias bombs as the YAML text a field holds (a pipeline request's `pipeline: "<yaml>"`)."""
    value: Any = document.base
    for part in path:
        value = value[part]
    inner = Document(".".join(path), yaml.safe_load(value) if isinstance(value, str) else value, {}, root="")
    return [
        dataclasses.replace(
            case,
            id=f"{case.id} in {'.'.join(path)}",
            base=document.base,
            path=path,
            value=case.yaml_text,
            yaml_text=None,
        )
        for case in _alias_bombs(inner)
    ]


def _alias_bombs(document: Document) -> list[Case]:
    """The two alias bombs, in the document's `metadata.annotations` (or at the top of a request body),
    each a few hundred bytes to a few hundred kilobytes of text."""
    where = ("metadata", "annotations", "hostile") if "metadata" in document.base else ("hostile",)

    def text(bomb: str) -> Callable[[], str]:
        return lambda: json.dumps(_with(document.base, where, _NESTED)).replace(json.dumps(_NESTED), bomb)

    scalar = "[&s " + json.dumps("x" * 1000) + ", " + ", ".join(["*s"] * MANY) + "]"
    laughs = "&l0 [" + ", ".join(['"lol"'] * 10) + "]"
    for level in range(1, 10):
        laughs = f"&l{level} [{laughs}, " + ", ".join([f"*l{level - 1}"] * 9) + "]"
    return [
        Case(
            Family.SCALAR_ALIAS_BOMB.value,
            Family.SCALAR_ALIAS_BOMB,
            yaml_text=text(scalar),
            must_refuse=True,
            names=("alias", "expand"),
        ),
        Case(
            Family.COLLECTION_ALIAS_BOMB.value,
            Family.COLLECTION_ALIAS_BOMB,
            yaml_text=text(laughs),
            must_refuse=True,
            names=("alias",),
        ),
    ]


@cache
def _gzip_bomb() -> str:
    """Base64 of gzip of COMPRESSED_BYTES: a JSON object with one long string (a few hundred KB)."""
    squeezer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"0" * (1 << 20)
    parts = [squeezer.compress(b'{"a": "')]
    parts += [squeezer.compress(chunk) for _ in range(COMPRESSED_BYTES >> 20)]
    parts += [squeezer.compress(b'"}'), squeezer.flush()]
    return base64.b64encode(b"".join(parts)).decode()


# --- The documents ---------------------------------------------------------------------------------


def _example(relative: str, index: int = 0) -> dict[str, Any]:
    return [d for d in yaml.safe_load_all((EXAMPLES / relative).read_text()) if d][index]


def _crd_schema(relative: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / relative).read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    schema = version["schema"]["openAPIV3Schema"]
    return {"type": "object", "properties": {"spec": schema["properties"]["spec"]}}


@dataclass(frozen=True)
class DocumentKind:
    """A kind of document and where its example and schema are."""

    name: str
    example: str
    crd: str


V1_JOBS = tuple(
    DocumentKind(kind, file, f"{plural}.argoml.io.yaml")
    for kind, file, plural in (
        ("TFJob", "tfjob.yaml", "tfjobs"),
        ("PyTorchJob", "pytorchjob-elastic.yaml", "pytorchjobs"),
        ("MXJob", "mxjob.yaml", "mxjobs"),
        ("XGBoostJob", "xgboostjob.yaml", "xgboostjobs"),
        ("JAXJob", "jaxjob.yaml", "jaxjobs"),
        ("PaddleJob", "paddlejob.yaml", "paddlejobs"),
        ("MPIJob", "mpijob.yaml", "mpijobs"),
    )
)


@cache
def documents() -> dict[str, Document]:
    """Every kind of document, by name."""
    found = {
        kind.name: Document(kind.name, _example(kind.example), _crd_schema(kind.crd)) for kind in V1_JOBS
    }
    found["HyperparamWorkflow"] = Document(
        "HyperparamWorkflow",
        _example("hyperparam-grid.yaml"),
        _crd_schema("hyperparamworkflows.argoml.io.yaml"),
    )
    found["TrainJob"] = Document(
        "TrainJob",
        _example("trainjob-torch.yaml"),
        _crd_schema("trainer/trainjobs.trainer.kubeflow.org.yaml"),
    )
    found["Tensorboard"] = Document("Tensorboard", _tensorboard(), _crd_schema("tensorboards.argoml.io.yaml"))
    found.update(_more_documents())
    return found


def _tensorboard() -> dict[str, Any]:
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "Tensorboard",
        "metadata": {"name": "hostile-tb", "namespace": "team-a"},
        "spec": {"logdirs": [{"name": "run", "path": "s3://bucket/run"}]},
    }


#: The two texts with no schema of their own: what a pipeline and an Argo Workflow (as the TensorBoard
#: spawner reads it) are made of, written here from docs/pipelines.md and Argo's Workflow status.
PIPELINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "parameters": {
            "type": "object",
            "additionalProperties": {"x-kubernetes-preserve-unknown-fields": True},
        },
        "dag": {
            "type": "object",
            "properties": {
                "start_at": {"type": "string"},
                "steps": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string"},
                            "command": {"type": "string"},
                            "next": {"type": "string"},
                            "iterate_on": {"type": "string"},
                            "items": {"type": "array", "items": {"type": "string"}},
                            "parallelism": {"type": "integer"},
                            "branches": {
                                "type": "object",
                                "additionalProperties": {"x-kubernetes-preserve-unknown-fields": True},
                            },
                            "branch": {"x-kubernetes-preserve-unknown-fields": True},
                            "retry": {"type": "object", "properties": {"limit": {"type": "integer"}}},
                        },
                    },
                },
            },
        },
    },
}
WORKFLOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"x-kubernetes-preserve-unknown-fields": True},
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "nodes": {
                    "type": "object",
                    "additionalProperties": {"x-kubernetes-preserve-unknown-fields": True},
                },
                "compressedNodes": {"type": "string", "format": "gzip-base64"},
                "artifactRepositoryRef": {"x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}
INTEGERS.update(
    {
        ".dag.steps.*.parallelism": None,  # Argo's own limit of a map's branches at once: no work for us
        ".dag.steps.*.retry.limit": None,  # Argo's retry count
    }
)


def _workflow() -> dict[str, Any]:
    """The example's Workflow as Argo leaves it once finished: its `tensorboard` artifact in the nodes."""
    workflow = _example("tensorboard-workflow.yaml")
    artifact = {"name": "tensorboard", "s3": {"key": "team-a/mnist-tb/logs"}}
    workflow["status"] = {
        "phase": "Succeeded",
        "nodes": {
            "mnist-tb": {
                "id": "mnist-tb",
                "name": "mnist-tb",
                "type": "Pod",
                "templateName": "train",
                "phase": "Succeeded",
                "outputs": {"artifacts": [artifact]},
            }
        },
    }
    return workflow


def _artifact_repository() -> dict[str, Any]:
    """The namespace's `artifact-repositories` ConfigMap, as Argo reads it (a YAML text per key)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "artifact-repositories",
            "namespace": "team-a",
            "annotations": {"workflows.argoproj.io/default-artifact-repository": "default-v1"},
        },
        "data": {"default-v1": "s3:\n  bucket: ml-logs\n  endpoint: minio.team-a:9000\n  insecure: true\n"},
    }


def _training_runtime() -> dict[str, Any]:
    runtime = yaml.safe_load((REPO / "trainer" / "runtimes" / "torch-distributed.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "torch-distributed", "namespace": "team-a"}
    return runtime


def _trainer_status_schema() -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / "trainer" / "trainjobs.trainer.kubeflow.org.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return {"type": "object", "properties": {"trainerStatus": status["properties"]["trainerStatus"]}}


PROGRESS_REPORT = {
    "trainerStatus": {
        "progressPercentage": 7,
        "estimatedRemainingSeconds": 600,
        "metrics": [{"name": "loss", "value": "0.25"}],
        "lastUpdatedTime": "2026-06-12T03:00:00Z",
    }
}


def _more_documents() -> dict[str, Document]:
    return {
        "TrainingRuntime": Document(
            "TrainingRuntime",
            _training_runtime(),
            _crd_schema("trainer/trainingruntimes.trainer.kubeflow.org.yaml"),
        ),
        "Pipeline": Document("Pipeline", _example("pipeline/pipeline.yaml"), PIPELINE_SCHEMA, root=""),
        "Workflow": Document("Workflow", _workflow(), WORKFLOW_SCHEMA),
        "ArtifactRepository": Document(
            "ArtifactRepository",
            _artifact_repository(),
            {
                "type": "object",
                "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}},
            },
            root="data",
            yaml_fields=(("data", "default-v1"),),
        ),
        "ProgressReport": Document(
            "ProgressReport", PROGRESS_REPORT, _trainer_status_schema(), root="trainerStatus"
        ),
    }


def review(document: Document, operation: str = "CREATE") -> Document:
    """The AdmissionReview the API server sends about `document`, with the document inside it: the
    review's own fields are attacked, and every case of the document inside `request.object`."""
    api_version = str(document.base.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    kind = str(document.base.get("kind", ""))
    metadata = document.base.get("metadata") or {}
    envelope = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0f7d6c1e-hostile",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "namespace": metadata.get("namespace", "team-a"),
            "name": metadata.get("name", ""),
            "operation": operation,
            "userInfo": {"username": "someone", "groups": ["system:authenticated"]},
            "object": dict(document.base),
            "dryRun": False,
        },
    }
    string = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {
            "request": {
                "type": "object",
                "properties": {
                    "uid": string,
                    "kind": {
                        "type": "object",
                        "properties": {"group": string, "version": string, "kind": string},
                    },
                    "namespace": string,
                    "name": string,
                    "operation": string,
                    "userInfo": {
                        "type": "object",
                        "properties": {"username": string, "groups": {"type": "array", "items": string}},
                    },
                    "dryRun": {"type": "boolean"},
                },
            }
        },
    }
    return Document(
        f"AdmissionReview/{document.name}",
        envelope,
        schema,
        root="request",
        embeds=((("request", "object"), document),),
    )
