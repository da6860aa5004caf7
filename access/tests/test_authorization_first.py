"""Authorization comes before expensive work: a user with no grant in the namespace a write names gets 403
before the body is validated, linted, expanded or transpiled (issue 16). Each endpoint's validator is
replaced by one that fails the test if it runs."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from hyperparam.tests.conftest import make_hpw, make_spec
from jobs.tests.cluster import job_manifest

pytestmark = pytest.mark.django_db


def must_not_run(*args, **kwargs):
    raise AssertionError("the body was validated before access was checked")


@pytest.fixture
def outsider() -> APIClient:
    """An editor of team-b, posting into team-a."""
    user = User.objects.create_user("outsider")
    NamespaceGrant.objects.create(user=user, namespace="team-b", role=Role.EDITOR)
    client = APIClient()
    client.force_authenticate(user)
    return client


def big_sweep() -> dict:
    spec = make_spec()
    spec["hyperparams"] = [{"name": f"p{n}", "values": list(range(50))} for n in range(20)]
    return make_hpw(spec, uid="")


def test_a_sweep_is_refused_before_it_is_checked_or_linted(outsider, monkeypatch):
    monkeypatch.setattr("hyperparam.api.serializers.check_manifest", must_not_run)
    response = outsider.post("/api/hyperparams/", big_sweep(), format="json")
    assert response.status_code == 403


def test_a_job_is_refused_before_it_is_checked(outsider, monkeypatch):
    monkeypatch.setattr("jobs.api.serializers.check_manifest", must_not_run)
    manifest = job_manifest("TFJob", {"Worker": 1000}, name="big", namespace="team-a")
    response = outsider.post("/api/jobs/", manifest, format="json")
    assert response.status_code == 403


def test_a_tensorboard_is_refused_before_its_source_is_read(outsider, monkeypatch):
    monkeypatch.setattr("tensorboard.api.views.actions.spawn", must_not_run)
    response = outsider.post("/api/tensorboards/", {"namespace": "team-a", "workflow": "w"}, format="json")
    assert response.status_code == 403


def test_the_same_body_in_the_outsiders_own_namespace_is_validated(outsider, monkeypatch):
    """The guard above is the grant, not the endpoint: in team-b the validator runs."""
    calls = []
    monkeypatch.setattr("hyperparam.api.serializers.check_manifest", lambda manifest: calls.append(1) or [])
    monkeypatch.setattr("hyperparam.api.views.submit_sweep", lambda manifest: manifest)
    sweep = big_sweep()
    sweep["metadata"]["namespace"] = "team-b"
    outsider.post("/api/hyperparams/", sweep, format="json")
    assert calls == [1]
