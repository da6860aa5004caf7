"""The hostile-input suite covers every door: each enumeration (the served API schema, the web and webhook
URLconfs, our management commands, the registered controllers) finds its doors by itself, and a door no
table classifies stops the suite — proved here with a door of each kind added on purpose."""

from __future__ import annotations

import types

import pytest
from django.urls import path

from .hostile import doors
from .test_hostile_api import SCHEMA


def test_every_operation_of_the_served_schema_is_a_door():
    found = {door.key for door, _ in doors.api_doors(SCHEMA)}
    for path_, methods in SCHEMA["paths"].items():
        for method, operation in methods.items():
            assert f"{method.upper()} {path_} ?query" in found
            for content_type in (operation.get("requestBody") or {}).get("content") or {}:
                assert f"{method.upper()} {path_} {content_type}" in found


def test_an_operation_with_a_body_no_table_describes_stops_the_suite():
    schema = {
        "paths": {"/api/new/": {"post": {"requestBody": {"content": {"application/json": {"schema": {}}}}}}},
        "components": {"schemas": {}},
    }
    with pytest.raises(doors.Unclassified, match="POST /api/new/"):
        list(doors.api_doors(schema))


def test_a_content_type_the_suite_does_not_know_stops_it():
    schema = {
        "paths": {"/api/jobs/": {"post": {"requestBody": {"content": {"application/cbor": {"schema": {}}}}}}},
        "components": {"schemas": {}},
    }
    with pytest.raises(doors.Unclassified, match="content type"):
        list(doors.api_doors(schema))


def test_every_page_is_a_door_and_a_form_that_takes_a_document_must_say_which(monkeypatch):
    assert {door.key for door, _ in doors.pages()} >= {"page dashboard:submit", "page dashboard:jobs"}
    monkeypatch.setattr(doors, "PAGE_FORMS", {})
    with pytest.raises(doors.Unclassified, match="dashboard:submit"):
        list(doors.pages())


def test_every_pattern_of_the_webhook_listener_is_classified(monkeypatch):
    assert {door.key for door, _ in doors.webhook_doors()} == set(doors.WEBHOOKS)
    monkeypatch.setattr(doors, "WEBHOOKS", {k: v for k, v in doors.WEBHOOKS.items() if k != "readyz"})
    with pytest.raises(doors.Unclassified, match="readyz"):
        list(doors.webhook_doors())


def test_every_pattern_of_the_tensorboard_origin_is_classified(monkeypatch):
    assert {door.key for door, _ in doors.tensorboard_origin_doors()} == set(doors.TENSORBOARD_ORIGIN)
    monkeypatch.setattr(doors, "TENSORBOARD_ORIGIN", {})
    with pytest.raises(doors.Unclassified, match="tensorboard-proxy"):
        list(doors.tensorboard_origin_doors())


def test_every_command_of_our_apps_is_classified(monkeypatch):
    assert {door.key for door in doors.command_doors()} == set(doors.COMMANDS)
    monkeypatch.setattr(doors, "COMMANDS", {k: v for k, v in doors.COMMANDS.items() if k != "render_job"})
    with pytest.raises(doors.Unclassified, match="render_job"):
        list(doors.command_doors())


def test_every_controller_of_a_deployment_with_every_option_on_is_classified(monkeypatch):
    kinds = doors.controller_kinds()
    assert {"TFJob", "TFJob.kubeflow.org", "TrainJob", "HyperparamWorkflow", "Tensorboard"} <= set(kinds)
    assert {door.key.split(" ", 1)[1] for door in doors.controller_doors()} == set(kinds)
    monkeypatch.setattr(doors, "CONTROLLERS", {k: v for k, v in doors.CONTROLLERS.items() if k != "TrainJob"})
    with pytest.raises(doors.Unclassified, match="TrainJob"):
        list(doors.controller_doors())


def test_a_door_that_reads_nothing_says_why():
    quiet = [
        door
        for door in [*doors.COMMANDS.values(), *doors.WEBHOOKS.values()]
        if door.reads is doors.Reads.NOTHING
    ]
    assert quiet
    assert all(door.why for door in quiet)


def test_a_new_pattern_in_the_listener_is_found():
    """The enumeration walks the URLconf: a pattern added to it is a new door."""
    from argoml_site import webhook_urls

    urlconf = types.ModuleType("listener_with_a_new_door")
    urlconf.urlpatterns = [*webhook_urls.urlpatterns, path("new", lambda r: None, name="new")]  # type: ignore[attr-defined]
    with pytest.raises(doors.Unclassified, match="new"):
        list(doors.webhook_doors(urlconf))
