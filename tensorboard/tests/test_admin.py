"""The admin lists TensorBoards with their phase and source; everything is read-only."""

from __future__ import annotations

import pytest

from kube.controller.mirror import apply_event
from tensorboard.models import Tensorboard

from .test_models import tensorboard

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/tensorboard/tensorboard/"


def mirrored(name: str, uid: str, phase: str, source: str | None) -> Tensorboard:
    obj = tensorboard("1", {"phase": phase, "url": f"http://tb/{name}/"})
    obj["metadata"].update(name=name, uid=uid)
    if source:
        obj["spec"]["workflowRef"] = {"kind": "Workflow", "name": source}
    apply_event(Tensorboard, "ADDED", obj)
    return Tensorboard.objects.get(uid=uid)


def test_the_list_shows_phase_and_source_and_filters_by_phase(admin_client):
    mirrored("mnist", "u1", "Ready", "mnist-train")
    mirrored("shared", "u2", "Pending", None)
    page = admin_client.get(CHANGELIST).content.decode()
    assert "Workflow mnist-train" in page
    assert "logdirs" in page  # the source of an instance opened on admin-allowed paths
    assert '<a href="http://tb/mnist/" rel="noopener" target="_blank">open</a>' in page
    ready = admin_client.get(CHANGELIST, {"phase": "Ready"}).content.decode()
    assert "mnist-train" in ready
    assert "shared" not in ready


def test_a_tensorboards_page_shows_its_logdirs_and_history_read_only(admin_client):
    row = mirrored("mnist", "u1", "Ready", "mnist-train")
    page = admin_client.get(f"{CHANGELIST}{row.id}/change/").content.decode()
    assert "<code>s3://ml/a</code>" in page
    assert 'name="_save"' not in page
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403
