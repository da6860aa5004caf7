"""The progress endpoint, driven through Django against kubesim (TokenRequest, TokenReview, the TrainJob's
status subresource), real Redis for the per-pod window and PostgreSQL for the kept reports. Answers are
Trainer's status server's (pkg/statusserver/server.go and its integration tests)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis
from django.conf import settings as django_settings
from django.db import OperationalError
from django.test import Client

import kube.client
from kube.client import get_client
from kube.resources import POD
from kubesim.simulator import Simulator
from trainer.models import TrainerStatusUpdate
from trainer.progress import reporting
from trainer.progress import server as progress_server
from trainer.tests import progress

pytestmark = pytest.mark.django_db

WHEN = "2026-06-12T03:00:00Z"
REPORT = {
    "trainerStatus": {
        "progressPercentage": 45,
        "estimatedRemainingSeconds": 120,
        "metrics": [{"name": "loss", "value": "0.15"}, {"name": "accuracy", "value": "0.92"}],
        "lastUpdatedTime": WHEN,
    }
}


@pytest.fixture
def cluster(kubesim_factory, settings) -> Iterator[Simulator]:
    """kubesim with authentication as the cluster; the webhook listener's URLs; the shipped write limiter."""
    simulator = kubesim_factory(auth=True)
    settings.KUBECONFIG = str(simulator.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    settings.ROOT_URLCONF = django_settings.WEBHOOK_URLCONF
    kube.client.reset_client()
    yield simulator
    kube.client.reset_client()


@pytest.fixture
def namespace(cluster) -> Iterator[str]:
    name = progress.prepare(cluster)
    store = redis.Redis.from_url(django_settings.REDIS_URL)  # before a test points REDIS_URL elsewhere
    yield name
    for key in store.scan_iter(f"{reporting.LIMIT_KEY_PREFIX}:{name}:*"):
        store.delete(key)


def post(namespace: str, job: str, body: object, token: str | None = None, **extra: str):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return Client().post(
        progress_server.status_path(namespace, job), data, content_type="application/json", **headers, **extra
    )


def trainer_status(namespace: str, job: str) -> dict | None:
    return (get_client().get(reporting.TRAIN_JOB, job, namespace).get("status") or {}).get("trainerStatus")


def assert_status(response, code: int, reason: str) -> dict:
    assert response.status_code == code, response.content
    body = response.json()
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    return body


class TestAReportFromAPodOfTheJob:
    def test_is_written_to_the_status_echoed_and_kept(self, namespace):
        job, [pod] = progress.train_job(namespace, "tj")
        response = post(namespace, "tj", REPORT, progress.job_token(namespace, "tj", pod["metadata"]["name"]))
        assert response.status_code == 200, response.content
        assert response.json() == REPORT
        assert trainer_status(namespace, "tj") == REPORT["trainerStatus"]
        [kept] = TrainerStatusUpdate.objects.filter(namespace=namespace)
        assert (kept.trainjob_name, str(kept.trainjob_uid), kept.pod) == (
            "tj",
            job["metadata"]["uid"],
            "tj-node-0-0",
        )
        assert (kept.progress_percentage, kept.estimated_remaining_seconds) == (45, 120)
        assert kept.metrics == REPORT["trainerStatus"]["metrics"]
        assert kept.reported_at == datetime(2026, 6, 12, 3, tzinfo=UTC)

    def test_replaces_the_previous_report_rather_than_merging(self, namespace):
        """Trainer's "Should overwrite existing status, not merge, when posting a new update"."""
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        assert post(namespace, "tj", REPORT, token).status_code == 200
        later = {"trainerStatus": {"metrics": [{"name": "loss", "value": "0.1"}], "lastUpdatedTime": WHEN}}
        assert post(namespace, "tj", later, token).status_code == 200
        assert trainer_status(namespace, "tj") == later["trainerStatus"]
        assert TrainerStatusUpdate.objects.filter(namespace=namespace).count() == 2

    def test_without_trainer_status_changes_nothing(self, namespace):
        """Trainer's "Should accept an empty update request but not overwrite existing status"."""
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        post(namespace, "tj", REPORT, token)
        response = post(namespace, "tj", {}, token)
        assert response.status_code == 200
        assert response.json() == {}
        assert trainer_status(namespace, "tj") == REPORT["trainerStatus"]
        assert TrainerStatusUpdate.objects.filter(namespace=namespace).count() == 1

    def test_past_the_crds_limits_is_422_naming_the_job_and_the_field(self, namespace):
        """Trainer's "Should reject a request with progressPercentage > 100 with a useful error message"."""
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        body = {"trainerStatus": {"progressPercentage": 101, "lastUpdatedTime": WHEN}}
        answer = assert_status(post(namespace, "tj", body, token), 422, "Invalid")
        assert answer["message"] == (
            'TrainJob.trainer.kubeflow.org "tj" is invalid: '
            "trainerStatus.progressPercentage: must be between 0 and 100, not 101"
        )
        assert trainer_status(namespace, "tj") is None
        assert not TrainerStatusUpdate.objects.filter(namespace=namespace).exists()

    @pytest.mark.parametrize("body", ["{not json", b"\xff", "[" * 50])
    def test_that_is_not_json_is_422(self, namespace, body):
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        answer = assert_status(post(namespace, "tj", body, token), 422, "Invalid")
        assert answer["message"] == "Invalid payload: the body is not JSON"

    def test_nested_past_the_depth_bound_is_422_naming_it(self, namespace):
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        body = '{"trainerStatus": ' + "[" * 5000 + "]" * 5000 + "}"
        answer = assert_status(post(namespace, "tj", body, token), 422, "Invalid")
        assert answer["message"] == (
            "Invalid payload: the JSON nests objects and arrays more than 100 levels deep (MAX_YAML_DEPTH)"
        )

    def test_for_a_job_deleted_since_is_404(self, namespace):
        """The TrainJob is gone and its pod lingers until the garbage collector deletes it."""
        owner = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "gone",
            "uid": str(uuid.uuid4()),
            "controller": True,
        }
        labels = {"jobset.sigs.k8s.io/jobset-name": "gone"}
        get_client().create(POD, progress.pod(namespace, "gone-node-0-0", labels, [owner]))
        token = progress.job_token(namespace, "gone", "gone-node-0-0")
        answer = assert_status(post(namespace, "gone", REPORT, token), 404, "NotFound")
        assert answer["message"] == "Train job not found"
        assert not TrainerStatusUpdate.objects.filter(namespace=namespace).exists()


class TestWhoMayReport:
    def test_nobody_without_a_token(self, namespace):
        progress.train_job(namespace, "tj")
        assert_status(post(namespace, "tj", REPORT), 401, "Unauthorized")
        assert_status(
            post(namespace, "tj", REPORT, HTTP_AUTHORIZATION="Basic dXNlcjpwYXNz"), 401, "Unauthorized"
        )

    def test_nobody_with_a_forged_token(self, namespace):
        progress.train_job(namespace, "tj")
        assert_status(post(namespace, "tj", REPORT, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"), 401, "Unauthorized")

    def test_not_a_token_of_another_audience(self, namespace):
        """A token the pod holds for the API server (or any other audience) is not for this endpoint."""
        _, [pod] = progress.train_job(namespace, "tj")
        for audience in ("https://kubernetes.default.svc.cluster.local", "trainer.kubeflow.org"):
            token = progress.token(namespace, pod["metadata"]["name"], audience)
            assert_status(post(namespace, "tj", REPORT, token), 401, "Unauthorized")

    def test_not_a_pod_of_another_job_even_with_its_own_jobs_audience(self, namespace):
        progress.train_job(namespace, "tj")
        _, [other] = progress.train_job(namespace, "other")
        # the other job's token, sent to this job: its audience is the other job's
        token = progress.job_token(namespace, "other", other["metadata"]["name"])
        assert_status(post(namespace, "tj", REPORT, token), 401, "Unauthorized")
        # a token the other job's pod obtained for this job's audience: the pod is not this job's
        token = progress.job_token(namespace, "tj", other["metadata"]["name"])
        assert_status(post(namespace, "tj", REPORT, token), 403, "Forbidden")
        assert trainer_status(namespace, "tj") is None

    def test_not_a_pod_that_only_copies_the_jobs_label(self, namespace):
        progress.train_job(namespace, "tj")
        impostor = get_client().create(
            POD, progress.pod(namespace, "impostor", {"jobset.sigs.k8s.io/jobset-name": "tj"}, [])
        )
        token = progress.job_token(namespace, "tj", impostor["metadata"]["name"])
        assert_status(post(namespace, "tj", REPORT, token), 403, "Forbidden")

    def test_not_a_token_bound_to_no_pod(self, namespace):
        progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", None)
        assert_status(post(namespace, "tj", REPORT, token), 403, "Forbidden")

    def test_not_a_pod_of_another_namespace(self, namespace, cluster):
        progress.train_job(namespace, "tj")
        elsewhere = progress.namespace(cluster)
        _, [pod] = progress.train_job(elsewhere, "tj")
        # the same job name in another namespace: the audience names the namespace
        token = progress.job_token(elsewhere, "tj", pod["metadata"]["name"])
        assert_status(post(namespace, "tj", REPORT, token), 401, "Unauthorized")
        token = progress.token(
            elsewhere, pod["metadata"]["name"], progress_server.token_audience(namespace, "tj")
        )
        assert_status(post(namespace, "tj", REPORT, token), 403, "Forbidden")

    def test_not_a_deleted_pod(self, namespace, cluster):
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        cluster.store.delete("pods", pod["metadata"]["name"], namespace)
        assert_status(post(namespace, "tj", REPORT, token), 401, "Unauthorized")


class TestWhereAReportIsFiled:
    """A report is filed under the TrainJob whose status it wrote, never under the uid a pod's owner
    reference claims (issue 27)."""

    def test_a_pod_claiming_another_namespaces_trainjob_writes_nothing_into_its_history(
        self, namespace, cluster
    ):
        victim, _ = progress.train_job(namespace, "tj")
        attacker = progress.namespace(cluster)
        progress.train_job(attacker, "tj")  # a TrainJob of the same name, so its audience is the attacker's
        forged_owner = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "tj",
            "uid": victim["metadata"]["uid"],
            "controller": True,
        }
        labels = {"jobset.sigs.k8s.io/jobset-name": "tj"}
        get_client().create(POD, progress.pod(attacker, "forger", labels, [forged_owner]))
        token = progress.job_token(attacker, "tj", "forger")

        assert_status(post(attacker, "tj", REPORT, token), 403, "Forbidden")

        assert not TrainerStatusUpdate.objects.filter(trainjob_uid=victim["metadata"]["uid"]).exists()
        assert trainer_status(attacker, "tj") is None
        assert trainer_status(namespace, "tj") is None

    def test_a_pod_of_an_earlier_trainjob_of_the_same_name_is_not_the_new_ones(self, namespace):
        """The earlier TrainJob is gone and its pod lingers until the garbage collector deletes it."""
        earlier_owner = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "tj",
            "uid": str(uuid.uuid4()),
            "controller": True,
        }
        labels = {"jobset.sigs.k8s.io/jobset-name": "tj"}
        get_client().create(POD, progress.pod(namespace, "tj-node-0-9", labels, [earlier_owner]))
        progress.train_job(namespace, "tj")  # the TrainJob of that name now
        token = progress.job_token(namespace, "tj", "tj-node-0-9")

        assert_status(post(namespace, "tj", REPORT, token), 403, "Forbidden")

        assert trainer_status(namespace, "tj") is None
        assert not TrainerStatusUpdate.objects.filter(namespace=namespace).exists()

    def test_a_trainjob_its_controller_gave_no_status_yet_is_422_and_nothing_is_kept(self, namespace):
        """Our controller writes a TrainJob's status before its first pod; the patch adds to it."""
        job, [pod] = progress.train_job(namespace, "tj")
        without_status = {key: value for key, value in job.items() if key != "status"}
        assert "status" not in get_client().replace(reporting.TRAIN_JOB, without_status, subresource="status")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])

        assert_status(post(namespace, "tj", REPORT, token), 422, "Invalid")
        assert not TrainerStatusUpdate.objects.filter(namespace=namespace).exists()


class TestBounds:
    def test_a_pod_past_its_window_gets_429_with_retry_after(self, namespace, settings):
        settings.TRAINER_STATUS_REPORTS_PER_WINDOW = 2
        settings.TRAINER_STATUS_WINDOW_SECONDS = 600
        _, [first, second] = progress.train_job(namespace, "tj", pods=2)
        token = progress.job_token(namespace, "tj", first["metadata"]["name"])
        assert [post(namespace, "tj", REPORT, token).status_code for _ in range(2)] == [200, 200]
        response = post(namespace, "tj", REPORT, token)
        answer = assert_status(response, 429, "TooManyRequests")
        assert 590 <= int(response["Retry-After"]) <= 600
        assert answer["message"].startswith(
            f"pod {first['metadata']['name']} reported more than 2 times in 600s"
        )
        # the window is the pod's: its sibling still reports
        sibling = progress.job_token(namespace, "tj", second["metadata"]["name"])
        assert post(namespace, "tj", REPORT, sibling).status_code == 200
        assert TrainerStatusUpdate.objects.filter(namespace=namespace).count() == 3

    def test_redis_down_lets_reports_through(self, namespace, settings):
        """The window is a courtesy to the API server, whose own limits still hold: no Redis, no window."""
        settings.REDIS_URL = "redis://127.0.0.1:1/0"
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        assert post(namespace, "tj", REPORT, token).status_code == 200

    def test_a_body_past_the_limit_is_413_before_anything_else(self, namespace, settings):
        settings.TRAINER_STATUS_MAX_BODY_BYTES = 1024
        body = {"trainerStatus": {"lastUpdatedTime": WHEN}, "padding": "x" * 2000}
        answer = assert_status(post(namespace, "tj", body), 413, "RequestEntityTooLarge")
        assert "at most 1024" in answer["message"]

    def test_only_post(self, namespace):
        response = Client().get(progress_server.status_path(namespace, "tj"))
        assert_status(response, 405, "MethodNotAllowed")
        assert response["Allow"] == "POST"

    @pytest.mark.parametrize(("ns", "job"), [("Bad_NS", "tj"), ("ml", "a" * 254), ("ml", "UPPER")])
    def test_a_name_no_trainjob_can_have_is_404(self, cluster, ns, job):
        assert_status(post(ns, job, REPORT, "x"), 404, "NotFound")

    @pytest.mark.parametrize(
        ("verb", "resource"),
        [
            ("create", "tokenreviews.authentication.k8s.io"),
            ("patch", "trainjobs.trainer.kubeflow.org/status"),
        ],
    )
    def test_an_api_server_failure_is_503_with_retry_after_and_no_details(
        self, namespace, cluster, monkeypatch, verb, resource
    ):
        """The pod did nothing wrong and the API server may be back in a moment: report again later."""
        monkeypatch.setattr(kube.client, "RETRY_BASE_SECONDS", 0.01)
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        cluster.faults.fail(500, verb=verb, resource=resource, times=None)
        response = post(namespace, "tj", REPORT, token)
        answer = assert_status(response, 503, "ServiceUnavailable")
        assert answer["message"] == "the Kubernetes API server is unavailable; report again in 5s"
        assert response["Retry-After"] == "5"
        assert not TrainerStatusUpdate.objects.filter(namespace=namespace).exists()

    def test_an_api_server_refusal_that_will_not_pass_is_500_with_no_details(self, namespace, cluster):
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        cluster.faults.fail(403, verb="patch", resource="trainjobs.trainer.kubeflow.org/status", times=None)
        answer = assert_status(post(namespace, "tj", REPORT, token), 500, "InternalError")
        assert answer["message"] == "Internal error"

    def test_a_database_that_cannot_be_reached_is_503_with_retry_after(self, namespace, monkeypatch):
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])

        def unreachable(*args: object) -> None:
            raise OperationalError("could not connect to server: Connection refused")

        monkeypatch.setattr(reporting, "record", unreachable)
        response = post(namespace, "tj", REPORT, token)
        answer = assert_status(response, 503, "ServiceUnavailable")
        assert answer["message"] == "the database is unavailable; report again in 5s"
        assert response["Retry-After"] == "5"


def test_unknown_paths_on_the_listener_are_404(cluster):
    assert (
        Client()
        .post(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/tj/{uuid.uuid4().hex}")
        .status_code
        == 404
    )


@pytest.mark.urls("argoml_site.urls")
def test_the_web_server_does_not_serve_the_endpoint(db):
    """Only the listener does: the Ingress exposes the web server."""
    assert (
        Client()
        .post(progress_server.status_path("ml", "tj"), "{}", content_type="application/json")
        .status_code
        == 404
    )


def _text(value: str) -> str:
    return json.dumps(value)


#: Every field of a report, with values out of range, of the wrong type, huge or odd, as raw JSON (so
#: NaN, Infinity and integers longer than Python reads can be sent): (field, JSON text of its value).
HOSTILE_FIELDS = [
    *(
        (field, value)
        for field in ("progressPercentage", "estimatedRemainingSeconds")
        for value in (
            "-1", "2147483648", "45.5", '"45"', "true", "[]", "{}", "NaN", "Infinity", "-Infinity", "1e400",
            "1" + "0" * 30, "9" * 5000, "-" + "9" * 5000, _text("x" * 60_000),
        )
    ),
    *(
        ("lastUpdatedTime", value)
        for value in (
            _text("0001-01-01T00:00:00+01:00"), _text("9999-12-31T23:59:59-01:00"),
            _text("0000-01-01T00:00:00Z"), _text("10000-01-01T00:00:00Z"), _text("2026-02-30T00:00:00Z"),
            _text("2026-06-12T03:00:00+24:00"), _text("2026-06-12T03:00:00"), _text("9" * 60_000),
            "NaN", "1e400", "9" * 5000, "[]", '""',
        )
    ),
    *(
        ("metrics", value)
        for value in (
            "{}", '"loss"', "NaN", "9" * 5000, "[1]", "[NaN]", '[{"name": NaN, "value": "1"}]',
            '[{"name": "loss", "value": Infinity}]', '[{"name": "loss", "value": ' + "9" * 5000 + "}]",
            '[{"name": "loss", "value": ' + _text("v" * 60_000) + "}]",
            '[{"name": ' + _text("n" * 60_000) + ', "value": "1"}]',
            '[{"name": "loss", "value": "\\u0000"}]', '[{"name": "\\ud800", "value": "1"}]',
            "[" + ", ".join(['{"name": "m", "value": "1"}'] * 2000) + "]",
        )
    ),
]  # fmt: skip


class TestHostileReports:
    """Every field of a report, sent out of range, of the wrong type or huge by a pod holding a valid
    token: a 422 naming that field, never a 5xx, nothing written (issue 27)."""

    @pytest.fixture
    def sender(self, namespace, settings):
        settings.TRAINER_STATUS_REPORTS_PER_WINDOW = 10_000
        _, [pod] = progress.train_job(namespace, "tj")
        token = progress.job_token(namespace, "tj", pod["metadata"]["name"])
        return lambda text: post(namespace, "tj", text, token)

    def test_each_bad_field_is_422_naming_it_and_nothing_is_written(self, sender, namespace):
        for field, value in HOSTILE_FIELDS:
            fields = {"lastUpdatedTime": _text(WHEN), field: value}
            text = '{"trainerStatus": {' + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}}"
            response = sender(text)
            assert response.status_code == 422, (field, value[:80], response.content[:300])
            answer = response.json()
            assert f"trainerStatus.{field}" in answer["message"], (field, value[:80], answer["message"][:300])
            assert len(answer["message"]) < 2000, (field, value[:80])
        assert trainer_status(namespace, "tj") is None
        assert not TrainerStatusUpdate.objects.filter(namespace=namespace).exists()

    @pytest.mark.parametrize(
        ("text", "named"),
        [("NaN", "<body>"), ("9" * 5000, "<body>"), ('{"trainerStatus": NaN}', "trainerStatus")],
    )
    def test_a_body_or_trainer_status_of_the_wrong_kind_is_422_naming_it(self, sender, text, named):
        answer = assert_status(sender(text), 422, "Invalid")
        assert f" {named}: " in answer["message"]

    def test_the_edges_of_the_time_range_are_accepted_and_stored_as_utc(self, sender, namespace):
        for sent, stored in (
            ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
            ("0001-01-01T00:00:00-01:00", "0001-01-01T01:00:00Z"),
            ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
        ):
            response = sender(json.dumps({"trainerStatus": {"lastUpdatedTime": sent}}))
            assert response.status_code == 200, response.content
            assert response.json() == {"trainerStatus": {"lastUpdatedTime": stored}}
            assert trainer_status(namespace, "tj") == {"lastUpdatedTime": stored}
