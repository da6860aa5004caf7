"""examples/training/kubeflow_progress.py, the SDK's `update_trainjob_status` the TrainJob example reports
with: the body it builds (pure, and read back by our endpoint's own parser), and its requests to a real
HTTPS server (the token, the CA, the throttle); and xgboost_trainjob.py's pure helpers. The example itself
reports to the real endpoint on the dev stack in argoml_site/tests/test_examples.py."""

from __future__ import annotations

import json
import ssl
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import pytest

from examples.tests.closed_form import TRAINING
from trainer.progress import update as progress_update
from webhooks import certs

NOW = datetime(2026, 6, 12, 3, 0, 0, tzinfo=UTC)


def load(name: str) -> Any:
    spec = importlib_util.spec_from_file_location(name, TRAINING / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib_util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


progress = load("kubeflow_progress")


def test_the_body_is_the_sdks_progress_clamped_and_every_metric_as_text():
    status = progress.trainer_status(150, -3, {"loss": 0.25, "epoch": 3, "note": "warm"}, NOW)
    assert status == {
        "lastUpdatedTime": "2026-06-12T03:00:00+00:00",
        "progressPercentage": 100,
        "estimatedRemainingSeconds": 0,
        "metrics": [
            {"name": "loss", "value": "0.25"},
            {"name": "epoch", "value": "3"},
            {"name": "note", "value": "warm"},
        ],
    }
    assert progress.trainer_status(-1, None, None, NOW) == {
        "lastUpdatedTime": "2026-06-12T03:00:00+00:00",
        "progressPercentage": 0,
    }


def test_the_time_is_sent_in_utc_whatever_the_pods_zone():
    east = NOW.astimezone(timezone(timedelta(hours=9)))
    assert progress.trainer_status(None, None, None, east)["lastUpdatedTime"] == "2026-06-12T03:00:00+00:00"


def test_at_most_256_metrics_are_sent_the_first_ones():
    metrics = {f"m{index}": index for index in range(300)}
    sent = progress.trainer_status(None, None, metrics, NOW)["metrics"]
    assert len(sent) == progress.MAX_METRICS == progress_update.MAX_METRICS
    assert sent[-1] == {"name": "m255", "value": "255"}


def test_what_it_sends_is_what_our_endpoint_reads():
    body = {
        "trainerStatus": progress.trainer_status(58, 4, {"loss": 0.1359291, "val_accuracy": 0.91205}, NOW)
    }
    parsed = progress_update.parse(progress_update.loads(json.dumps(body)))
    assert parsed is not None
    assert parsed.as_status() == {
        "progressPercentage": 58,
        "estimatedRemainingSeconds": 4,
        "metrics": [{"name": "loss", "value": "0.1359291"}, {"name": "val_accuracy", "value": "0.91205"}],
        "lastUpdatedTime": "2026-06-12T03:00:00Z",
    }


@dataclass
class Endpoint:
    """A real HTTPS server standing for the progress endpoint: what it received, what it answers."""

    url: str
    ca_file: Path
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: int = 200


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[Endpoint]:
    bundle = certs.issue(["localhost"], ["127.0.0.1"], now=datetime.now(UTC))
    (tmp_path / "ca.crt").write_bytes(bundle.ca)
    (tmp_path / "tls.crt").write_bytes(bundle.cert)
    (tmp_path / "tls.key").write_bytes(bundle.key)
    served: Endpoint

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            served.received.append((self.headers.get("Authorization", ""), body))
            answer = json.dumps({"trainerStatus": body["trainerStatus"]} if served.answer == 200 else {})
            self.send_response(served.answer)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/tj/status"
    served = Endpoint(f"https://127.0.0.1:{server.server_address[1]}{path}", tmp_path / "ca.crt")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def reporter(endpoint: Endpoint, tmp_path: Path, clock: Clock, **environ: str) -> Any:
    token = tmp_path / "token"
    if not token.exists():
        token.write_text("token-1\n")
    env = {
        progress.ENV_URL: endpoint.url,
        progress.ENV_CA_CERT: str(endpoint.ca_file),
        progress.ENV_TOKEN: str(token),
        **environ,
    }
    return progress.Reporter(env, clock=clock, sleep=clock.sleep)


def test_a_report_is_a_post_with_the_token_file_as_bearer_trusting_the_injected_ca(endpoint, tmp_path):
    clock = Clock()
    sender = reporter(endpoint, tmp_path, clock)
    assert sender.update(40, 12, {"loss": 0.5}) is True
    [(authorization, body)] = endpoint.received
    assert authorization == "Bearer token-1"
    assert body["trainerStatus"]["progressPercentage"] == 40
    assert body["trainerStatus"]["metrics"] == [{"name": "loss", "value": "0.5"}]
    assert sender.accepted == [body["trainerStatus"]]


def test_reports_less_than_5_seconds_apart_are_dropped_unless_the_last_waits(endpoint, tmp_path):
    clock = Clock()
    sender = reporter(endpoint, tmp_path, clock)
    assert sender.update(10) is True
    clock.now += 4.0
    assert sender.update(20) is False
    assert len(endpoint.received) == 1
    clock.now += 1.0
    assert sender.update(30) is True
    clock.now += 2.0
    assert sender.update(100, wait=True) is True
    assert clock.slept[-1] == pytest.approx(3.0)
    assert [body["trainerStatus"]["progressPercentage"] for _, body in endpoint.received] == [10, 30, 100]


def test_the_token_is_read_again_at_each_report_as_the_kubelet_rotates_it(endpoint, tmp_path):
    clock = Clock()
    sender = reporter(endpoint, tmp_path, clock)
    sender.update(1)
    (tmp_path / "token").write_text("token-2\n")
    clock.now += 5
    sender.update(2)
    assert [authorization for authorization, _ in endpoint.received] == ["Bearer token-1", "Bearer token-2"]


def test_a_refused_report_returns_false_and_is_not_counted_as_accepted(endpoint, tmp_path):
    endpoint.answer = 401
    sender = reporter(endpoint, tmp_path, Clock())
    assert sender.update(5) is False
    assert sender.accepted == []
    assert sender.seconds_until_next() == 0.0, "a refused report does not start the throttle window"


def test_a_server_the_ca_did_not_sign_gets_nothing(endpoint, tmp_path):
    other = certs.issue(["localhost"], ["127.0.0.1"], now=datetime.now(UTC))
    (tmp_path / "other-ca.crt").write_bytes(other.ca)
    sender = reporter(endpoint, tmp_path, Clock(), **{progress.ENV_CA_CERT: str(tmp_path / "other-ca.crt")})
    assert sender.update(5) is False
    assert endpoint.received == []


def test_outside_a_trainjob_or_without_a_token_nothing_is_sent(endpoint, tmp_path):
    assert progress.Reporter({}, clock=Clock()).update(5) is False
    missing = reporter(endpoint, tmp_path, Clock(), **{progress.ENV_TOKEN: str(tmp_path / "absent")})
    assert missing.update(5) is False
    assert endpoint.received == []


@pytest.fixture
def trainjob_script(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setitem(sys.modules, "kubeflow_progress", progress)  # in the pod, from the script's folder
    return load("xgboost_trainjob")


@pytest.mark.parametrize(
    ("done", "total", "percent"), [(0, 200, 0), (1, 200, 0), (117, 200, 58), (200, 200, 100)]
)
def test_progress_is_whole_percent_of_the_rounds_done(trainjob_script, done, total, percent):
    assert trainjob_script.progress_percent(done, total) == percent


@pytest.mark.parametrize(
    ("elapsed", "done", "total", "seconds"),
    [(0.0, 0, 10, 0), (2.0, 4, 10, 3), (2.1, 3, 10, 5), (9.0, 10, 10, 0)],
)
def test_the_estimate_is_the_rounds_left_at_the_mean_pace_rounded_up(
    trainjob_script, elapsed, done, total, seconds
):
    assert trainjob_script.estimated_remaining_seconds(elapsed, done, total) == seconds


def test_the_metrics_are_the_last_rounds_of_xgboosts_evaluation_log(trainjob_script):
    log = {"train": {"logloss": [0.6, 0.5]}, "valid": {"logloss": [0.65, 0.55], "error": [0.3, 0.25]}}
    assert trainjob_script.round_metrics(log) == {"loss": 0.5, "val_loss": 0.55, "val_accuracy": 0.75}
