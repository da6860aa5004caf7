"""Bounded work at every REST API operation: each (operation, content type) of the schema the web process
serves is sent the hostile corpus of what it reads, by an editor of team-a with the simulator as the
cluster, and must answer within its budgets — a refusal naming the field, or an acceptance — never a 5xx
(issue 27; the doors and the corpus are in `hostile/`, the rules in docs/security.md "Bounded work")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token

from .hostile import cluster as hostile_cluster
from .hostile import corpus, doors, world
from .hostile import names as hostile_names
from .hostile.checks import Answer, Figures, problems
from .hostile.measure import measured

NAMESPACE = "team-a"
SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
#: What a query or path parameter is sent, by the parameter's type: each a few bytes to 300 KB.
QUERY_VALUES = {
    "long": "x" * corpus.LONG_STRING,
    "huge-integer": str(2**70),
    "negative": "-1",
    "overflowing-float": "1e999",
    "not-a-number": "nan",
    "wrong-type": "abc",
}
REPEATED = 10_000


def request_documents() -> dict[str, corpus.Document]:
    """The bodies that are not custom resources, with the schema the API serves for them."""
    components = SCHEMA["components"]["schemas"]
    operations = {operation.name: operation for operation in doors.operations(SCHEMA)}

    def schema_of(name: str) -> Any:
        return operations[name].request_schema[doors.JSON]

    pipeline = corpus.documents()["Pipeline"]
    config = corpus._example("pipeline/config.yaml")
    assert components  # the schema resolved its components
    return {
        "TensorboardRequest": corpus.Document(
            "TensorboardRequest",
            {"namespace": NAMESPACE, "workflow": "mnist-tb"},
            schema_of("POST /api/tensorboards/"),
            root="",
        ),
        "TokenRequest": corpus.Document(
            "TokenRequest",
            {"username": "someone", "password": "not-the-password"},
            schema_of("POST /api/token/"),
            root="",
        ),
        "PipelineRequest": corpus.Document(
            "PipelineRequest",
            {"pipeline": dict(pipeline.base), "config": config, "namespace": NAMESPACE},
            schema_of("POST /api/pipelines/submit"),
            root="",
            embeds=((("pipeline",), pipeline),),
            yaml_fields=(("pipeline",), ("config",)),
        ),
    }


def all_documents() -> dict[str, corpus.Document]:
    return {**corpus.documents(), **request_documents()}


def body_cases() -> Iterator[Any]:
    documents = all_documents()
    for door, operation in doors.api_doors(SCHEMA):
        if door.reads in (doors.Reads.JSON_DOCUMENT, doors.Reads.YAML_DOCUMENT):
            read = [documents[name] for name in door.documents]
            as_text = door.reads is doors.Reads.YAML_DOCUMENT  # a YAML text may carry aliases
            for document, case in corpus.distinct(read, text=as_text):
                yield pytest.param(door, operation, case, id=f"{door.key} | {document.name} | {case.id}")
        elif door.reads is doors.Reads.FORM_FIELDS:
            for case in form_cases(operation):
                yield pytest.param(door, operation, case, id=f"{door.key} | {case.id}")


def form_cases(operation: doors.Operation) -> list[corpus.Case]:
    """A flat form with every field given: each field in turn a 300,000-character string, and a form of
    50,000 fields."""
    schema = next(iter(schema for ctype, schema in operation.request_schema.items() if ctype in doors.FORMS))
    fields = list(schema.get("properties") or {})
    base = dict.fromkeys(fields, "x")
    made = [
        corpus.Case(
            f"{corpus.Family.LONG_STRING.value} {name}",
            corpus.Family.LONG_STRING,
            base,
            (name,),
            lambda: "x" * corpus.LONG_STRING,
            names=(name,),
        )
        for name in fields
    ]
    made.append(
        corpus.Case(
            f"{corpus.Family.MANY_KEYS.value} form",
            corpus.Family.MANY_KEYS,
            {},
            (),  # the value is the whole form
            lambda: {f"k{i}": "v" for i in range(corpus.MANY)},
            names=("DATA_UPLOAD_MAX_NUMBER_FIELDS",),
        )
    )
    return made


def form_fields(case: corpus.Case) -> dict[str, Any]:
    """A flat form's fields: the case's base with its one field changed, or the whole form its value."""
    assert case.value is not None
    if not case.path:
        return dict(case.value())
    return {**(case.base or {}), str(case.path[0]): case.value()}


def query_cases() -> Iterator[Any]:
    for door, operation in doors.api_doors(SCHEMA):
        if door.reads is not doors.Reads.QUERY:
            continue
        for parameter in [*operation.parameters, {"name": "unknown", "in": "query"}]:
            for label, value in QUERY_VALUES.items():
                yield pytest.param(
                    door, operation, parameter, label, value, id=f"{door.key} | {parameter['name']}={label}"
                )
            if parameter["in"] == "query":
                yield pytest.param(
                    door,
                    operation,
                    parameter,
                    "repeated",
                    None,
                    id=f"{door.key} | {parameter['name']} x{REPEATED}",
                )


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """kubesim in its own process, with every CRD a submit reaches and team-a."""
    with hostile_cluster.separate_simulator(NAMESPACE):
        yield


@pytest.fixture(scope="module")
def seeded(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """One of every row, so that a path's id names a real one and a hostile query reaches its filters."""
    with world.seeded(django_db_blocker) as rows:
        yield rows


@pytest.fixture
def editor(seeded: dict[str, Any], db: None, cluster: None) -> Client:
    token, _ = Token.objects.get_or_create(user=seeded["editor"])
    return Client(HTTP_AUTHORIZATION=f"Token {token.key}")


@pytest.fixture
def figures(hostile_figures: dict[str, Figures]) -> Figures:
    return hostile_figures.setdefault("api", Figures("api"))


def _answer(response: Any) -> Answer:
    text = response.content.decode("utf-8", "replace") if not response.streaming else ""
    return Answer(response.status_code, text, refused=400 <= response.status_code < 500)


def _path(operation: doors.Operation, rows: dict[str, Any], overrides: dict[str, str] | None = None) -> str:
    """The operation's path naming the seeded row of its collection (`/api/hyperparams/{id}/` the sweep)."""
    collection = operation.path.removeprefix("/api/").split("/", 1)[0]
    values = {
        key: str(value)
        for key, value in world.path_values(rows, world.API_TARGETS.get(collection, "")).items()
    }
    values.update(overrides or {})
    return re.sub(r"\{(\w+)\}", lambda match: values[match.group(1)], operation.path)


@pytest.mark.parametrize(("door", "operation", "case"), list(body_cases()))
def test_every_body_is_bounded(seeded, editor, figures, door, operation, case):
    base = hostile_names.renamed(case)
    content_type = door.key.rsplit(" ", 1)[-1]
    if content_type == doors.JSON:
        body: Any = case.as_json(base) if case.yaml_text is None else case.as_yaml()
    elif content_type == doors.YAML:
        body = case.as_yaml(base)  # a JSON text is YAML too; the alias bombs only YAML can say
    else:
        fields = form_fields(case)
        body = {key: value if isinstance(value, str) else json.dumps(value) for key, value in fields.items()}
        if content_type == "application/x-www-form-urlencoded":
            body = urlencode(body)

    def send() -> Answer:
        method = getattr(editor, operation.method.lower())
        if content_type == "multipart/form-data":
            return _answer(method(_path(operation, seeded), body))
        return _answer(method(_path(operation, seeded), body, content_type=content_type))

    cost = measured(send)
    figures.record(case.family.value, door.key, cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))


def parameter_names(operation: doors.Operation, name: str, label: str) -> tuple[str, ...]:
    """What a refusal of a hostile parameter must name: the parameter, or Django's bound on their number;
    nothing for an operation that takes a body (sent none, it is refused for the body's fields)."""
    if operation.content_types:
        return ()
    return (name, "DATA_UPLOAD_MAX_NUMBER_FIELDS") if label == "repeated" else (name,)


@pytest.mark.parametrize(("door", "operation", "parameter", "label", "value"), list(query_cases()))
def test_every_parameter_is_bounded(seeded, editor, figures, door, operation, parameter, label, value):
    name = parameter["name"]
    if parameter["in"] == "path":
        path, query = _path(operation, seeded, {name: value}), ""
    elif value is None:
        path, query = _path(operation, seeded), "&".join([f"{name}=1"] * REPEATED)
    else:
        path, query = _path(operation, seeded), f"{name}={value}"
    case = corpus.Case(
        f"{name}={label}", corpus.Family.WRONG_TYPE, names=parameter_names(operation, name, label)
    )

    def send() -> Answer:
        url = f"{path}?{query}" if query else path
        return _answer(getattr(editor, operation.method.lower())(url))

    cost = measured(send)
    figures.record(f"parameter {label}", door.key, cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))
