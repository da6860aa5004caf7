"""Bounded work at every page of the web process: each pattern outside the API and the admin (found by
walking the URLconf) is sent hostile values in every query parameter it reads — found by watching which
ones a page asks for on an ordinary visit — and in its path; the Submit page is sent every kind's hostile
documents as pasted YAML. Each answer comes within the budgets of `hostile.measure`, never a 5xx
(issue 27; docs/security.md "Bounded work")."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.http import QueryDict
from django.test import Client

from . import endpoints
from .hostile import corpus, doors, world
from .hostile import names as hostile_names
from .hostile.checks import Answer, Figures, problems
from .hostile.measure import measured
from .test_hostile_api import QUERY_VALUES, REPEATED

PAGE_DOORS = list(doors.pages())


def query_doors() -> Iterator[Any]:
    for door, endpoint in PAGE_DOORS:
        if door.reads is doors.Reads.QUERY:
            for label in [*QUERY_VALUES, "repeated"]:
                yield pytest.param(door, endpoint, label, id=f"{door.key} | {label}")


def form_cases() -> Iterator[Any]:
    documents = corpus.documents()
    for door, endpoint in PAGE_DOORS:
        read = [documents[name] for name in door.documents]
        for document, case in corpus.distinct(read, text=True):
            yield pytest.param(door, endpoint, case, id=f"{door.key} | {document.name} | {case.id}")


@pytest.fixture(scope="module")
def seeded(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    with world.seeded(django_db_blocker) as rows:
        yield rows


@pytest.fixture
def editor(seeded: dict[str, Any]) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(seeded["editor"])
    return client


@pytest.fixture
def figures(hostile_figures: dict[str, Figures]) -> Figures:
    return hostile_figures.setdefault("pages", Figures("pages"))


@contextmanager
def recorded_parameters() -> Iterator[set[str]]:
    """The names a page asks its query string for (`request.GET.get(...)`, a form bound to it, ...)."""
    asked: set[str] = set()
    originals = {name: getattr(QueryDict, name) for name in ("get", "getlist", "__getitem__", "__contains__")}

    def recording(name: str) -> Any:
        def method(self: QueryDict, key: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(key, str):
                asked.add(key)
            return originals[name](self, key, *args, **kwargs)

        return method

    for name in originals:
        setattr(QueryDict, name, recording(name))
    try:
        yield asked
    finally:
        for name, original in originals.items():
            setattr(QueryDict, name, original)


def page_path(endpoint: endpoints.Endpoint, rows: dict[str, Any]) -> str:
    rule = endpoints.classify(endpoint)
    values = world.path_values(rows, rule.target)
    if endpoint.key == "dashboard:vendored":
        values["name"] = "htmx.min.js"
    return endpoints.concrete_path(endpoint, values)


def _answer(response: Any) -> Answer:
    text = b"".join(response.streaming_content) if response.streaming else response.content
    status = response.status_code
    return Answer(status, text.decode("utf-8", "replace")[:100_000], refused=400 <= status < 500)


@pytest.mark.django_db
@pytest.mark.parametrize(("door", "endpoint", "label"), list(query_doors()))
def test_every_page_parameter_is_bounded(seeded, editor, figures, door, endpoint, label):
    path = page_path(endpoint, seeded)
    with recorded_parameters() as asked:
        editor.get(path)
    found = []
    for name in sorted(asked | {"unknown"}):
        query = "&".join([f"{name}=1"] * REPEATED) if label == "repeated" else f"{name}={QUERY_VALUES[label]}"
        names = (name, "DATA_UPLOAD_MAX_NUMBER_FIELDS") if label == "repeated" else (name,)
        case = corpus.Case(f"{name}={label}", corpus.Family.WRONG_TYPE, names=names)
        cost = measured(lambda query=query: _answer(editor.get(f"{path}?{query}")))
        figures.record(f"parameter {label}", door.key, cost)
        found += [f"{name}: {problem}" for problem in problems(case, cost)]
    assert not found, found


@pytest.mark.django_db
@pytest.mark.parametrize(("door", "endpoint", "case"), list(form_cases()))
def test_every_pasted_document_is_bounded(seeded, editor, figures, door, endpoint, case):
    path = page_path(endpoint, seeded)
    text = case.as_yaml(hostile_names.renamed(case))
    cost = measured(lambda: _answer(editor.post(path, {"manifest": text, "action": "preview"})))
    figures.record(case.family.value, door.key, cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))
