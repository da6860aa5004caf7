"""The web process as the image runs it: gunicorn with deploy/gunicorn.conf.py, TLS from certificate files,
the collected static files served by deploy/wsgi.py, and the multiprocess metrics directory kept clean."""

from __future__ import annotations

import http.client
import os
import runpy
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import prometheus_client  # noqa: F401 - chooses its value class now, before a test sets PROMETHEUS_MULTIPROC_DIR
import pytest
from django.core.exceptions import ImproperlyConfigured

from webhooks import certs

from .manifests import DEPLOY, REPO

CONFIG = DEPLOY / "gunicorn.conf.py"
GUNICORN = Path(sys.executable).parent / "gunicorn"
PLAIN = {"GUNICORN_CERTFILE": "", "GUNICORN_KEYFILE": ""}


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> dict[str, Path]:
    """A CA and a serving certificate for 127.0.0.1, issued the way `webhook_certs` issues them."""
    directory = tmp_path_factory.mktemp("tls")
    bundle = certs.issue(["localhost"], ["127.0.0.1"], now=datetime.now(UTC), days=1)
    files = {"ca": directory / "ca.crt", "cert": directory / "tls.crt", "key": directory / "tls.key"}
    files["ca"].write_bytes(bundle.ca)
    files["cert"].write_bytes(bundle.cert)
    files["key"].write_bytes(bundle.key)
    return files


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def web(tls_files, collected_static, tmp_path_factory) -> Iterator[dict[str, object]]:
    """gunicorn started with the deploy config on a free port; stopped (SIGTERM, as Kubernetes) after."""
    port = free_port()
    metrics = tmp_path_factory.mktemp("metrics")
    (metrics / "counter_99999.db").write_bytes(b"a sample file of a process that no longer exists")
    log = tmp_path_factory.mktemp("log") / "gunicorn.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deploy.tests.static_settings",
        "TEST_STATIC_ROOT": str(collected_static),
        "SECRET_KEY": "test-only-secret-key",
        "ALLOWED_HOSTS": "127.0.0.1",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_CERTFILE": str(tls_files["cert"]),
        "GUNICORN_KEYFILE": str(tls_files["key"]),
        "GUNICORN_WORKERS": "2",
        "GUNICORN_THREADS": "2",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        "METRICS_TOKEN": "scrape-token",
    }
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(GUNICORN), "--config", str(CONFIG)],
            cwd="/",
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    context = ssl.create_default_context(cafile=str(tls_files["ca"]))
    base = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/healthz", context=context, timeout=2)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"gunicorn did not answer:\n{log.read_text()}")
            time.sleep(0.2)
    try:
        yield {
            "base": base,
            "port": port,
            "context": context,
            "metrics": metrics,
            "log": log,
            "process": process,
        }
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def get(web, path: str, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    request = urllib.request.Request(f"{web['base']}{path}", headers=headers or {})
    with urllib.request.urlopen(request, context=web["context"], timeout=10) as response:
        return response.status, response.headers.get("Content-Type", ""), response.read()


def test_healthz_answers_over_tls_with_the_certificate_from_the_files(web):
    status, content_type, body = get(web, "/healthz")
    assert status == 200
    assert content_type == "application/json"
    assert body == b'{"status": "ok"}'


def test_plain_http_is_not_served_on_the_tls_port(web):
    with pytest.raises((ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(f"http://127.0.0.1:{web['port']}/healthz", timeout=5)


def test_the_collected_static_files_are_served(web):
    status, content_type, body = get(web, "/static/admin/css/base.css")
    assert status == 200
    assert content_type.startswith("text/css")
    assert b"body" in body


def test_metrics_are_served_from_the_multiprocess_directory(web):
    status, content_type, _ = get(web, "/metrics", {"Authorization": "Bearer scrape-token"})
    assert status == 200
    assert content_type.startswith("text/plain")


def test_sample_files_of_a_previous_start_are_removed(web):
    assert not (web["metrics"] / "counter_99999.db").exists()
    assert "stale sample file(s) removed" in web["log"].read_text()


def test_without_tls_files_it_serves_plain_http_and_stops_gracefully_on_sigterm(collected_static, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deploy.tests.static_settings",
        "TEST_STATIC_ROOT": str(collected_static),
        "SECRET_KEY": "test-only-secret-key",
        "ALLOWED_HOSTS": "127.0.0.1",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_CERTFILE": "",
        "GUNICORN_KEYFILE": "",
        "GUNICORN_WORKERS": "1",
    }
    log = tmp_path / "gunicorn.log"
    with log.open("w") as output:
        command = [str(GUNICORN), "--config", str(CONFIG)]
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=output)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
            break
        except OSError:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert "Shutting down: Master" in log.read_text()


# -- the configuration as a module ------------------------------------------------------------------------
def load_config(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, object]:
    for name in [name for name in os.environ if name.startswith("GUNICORN_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(CONFIG))


def test_the_defaults_serve_tls_from_the_mounted_secret_with_gthread_workers(monkeypatch, tls_files):
    config = load_config(
        monkeypatch, GUNICORN_CERTFILE=str(tls_files["cert"]), GUNICORN_KEYFILE=str(tls_files["key"])
    )
    assert config["bind"] == ["0.0.0.0:8443"]
    assert config["worker_class"] == "gthread"
    assert (config["workers"], config["threads"], config["timeout"], config["keepalive"]) == (2, 1, 60, 30)
    assert config["graceful_timeout"] < 30, "must finish before the pod's terminationGracePeriodSeconds"
    assert config["wsgi_app"] == "deploy.wsgi:application"
    assert (config["certfile"], config["keyfile"]) == (str(tls_files["cert"]), str(tls_files["key"]))


def test_the_environment_tunes_workers_and_timeouts(monkeypatch):
    config = load_config(
        monkeypatch,
        GUNICORN_CERTFILE="",
        GUNICORN_KEYFILE="",
        GUNICORN_WORKERS="5",
        GUNICORN_THREADS="16",
        GUNICORN_TIMEOUT="120",
        GUNICORN_ACCESS_LOG="true",
    )
    assert (config["workers"], config["threads"], config["timeout"]) == (5, 16, 120)
    assert config["accesslog"] == "-"
    assert (config["certfile"], config["keyfile"]) == (None, None)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"GUNICORN_CERTFILE": "/nowhere/tls.crt", "GUNICORN_KEYFILE": "/nowhere/tls.key"},
            "GUNICORN_CERTFILE=",
        ),
        (
            {"GUNICORN_CERTFILE": "", "GUNICORN_KEYFILE": "/x/tls.key"},
            "Set both GUNICORN_CERTFILE and GUNICORN_KEYFILE",
        ),
        (
            {"GUNICORN_CERTFILE": "", "GUNICORN_KEYFILE": "", "GUNICORN_WORKERS": "many"},
            "GUNICORN_WORKERS='many'",
        ),
        ({"GUNICORN_CERTFILE": "", "GUNICORN_KEYFILE": "", "GUNICORN_THREADS": "0"}, "GUNICORN_THREADS=0"),
    ],
)
def test_a_bad_setting_stops_the_start_naming_the_variable(monkeypatch, env, message):
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(")):
        load_config(monkeypatch, **env)


def test_a_dead_workers_live_samples_are_dropped(monkeypatch, tmp_path):
    config = load_config(monkeypatch, GUNICORN_CERTFILE="", GUNICORN_KEYFILE="")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    (tmp_path / "gauge_livesum_4242.db").write_bytes(b"")
    (tmp_path / "gauge_livesum_4343.db").write_bytes(b"")
    config["child_exit"](None, type("Worker", (), {"pid": 4242})())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gauge_livesum_4343.db"]


# -- the webhook listener -----------------------------------------------------------------------------------
WEBHOOKS_CONFIG = DEPLOY / "gunicorn_webhooks.conf.py"


def test_the_webhook_listener_config_is_the_web_one_serving_the_webhook_app(monkeypatch, tls_files):
    monkeypatch.setenv("GUNICORN_WORKERS", "3")
    for name in ("GUNICORN_CERTFILE", "GUNICORN_KEYFILE"):
        monkeypatch.setenv(name, str(tls_files["cert" if name.endswith("CERTFILE") else "key"]))
    config = runpy.run_path(str(WEBHOOKS_CONFIG))
    assert config["wsgi_app"] == "argoml_site.webhook_wsgi:application"
    assert config["proc_name"] == "argoml-webhooks"
    assert (config["certfile"], config["keyfile"]) == (str(tls_files["cert"]), str(tls_files["key"]))
    assert (config["workers"], config["worker_class"]) == (3, "gthread")


def test_the_webhook_listener_serves_reviews_and_probes_over_tls_and_nothing_else(tls_files, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "SECRET_KEY": "test-only-secret-key",
        "ALLOWED_HOSTS": "127.0.0.1",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_CERTFILE": str(tls_files["cert"]),
        "GUNICORN_KEYFILE": str(tls_files["key"]),
        "GUNICORN_WORKERS": "1",
    }
    log = tmp_path / "gunicorn.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(GUNICORN), "--config", str(WEBHOOKS_CONFIG)], cwd="/", env=env, stdout=output, stderr=output
        )
    context = ssl.create_default_context(cafile=str(tls_files["ca"]))

    def status(method: str, path: str) -> int:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        try:
            connection.request(method, path, body=b"{}" if method == "POST" else None,
                               headers={"Content-Type": "application/json"})  # fmt: skip
            return connection.getresponse().status
        finally:
            connection.close()

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert status("GET", "/healthz") == 200
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not answer:\n{log.read_text()}")
                time.sleep(0.2)
        assert status("POST", "/webhooks/validate") == 400  # not a review: answered by the webhook view
        assert [status("GET", path) for path in ("/admin/", "/api/", "/dashboard/", "/metrics")] == [404] * 4
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
