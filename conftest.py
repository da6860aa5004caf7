"""Fixtures shared by every app's tests: real Celery worker processes and a real browser."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The simulator is every test's cluster: fixtures `kubesim` and `kubesim_factory`.
pytest_plugins = ["kubesim.pytest_plugin"]
#: Fixtures through which a test reaches the database (pytest-django's, and the live server on top of them).
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup", "live_server"}

REPO = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
# Without these Chromium keeps calling out to the (closed) network; see the machine notes.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--database-tests-only",
        action="store_true",
        help="Run only the tests that use the database (the SQLite leg of make test: docs/testing.md).",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With --database-tests-only, leave out the tests that never touch the database: a second database
    changes nothing for them."""
    if not config.getoption("database_tests_only"):
        return
    kept, left_out = [], []
    for item in items:
        uses_database = item.get_closest_marker("django_db") is not None or bool(
            DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
        )
        (kept if uses_database else left_out).append(item)
    config.hook.pytest_deselected(items=left_out)
    items[:] = kept


@dataclass
class WorkerProcess:
    """A Celery worker subprocess consuming a queue of its own, so concurrent test runs never share one."""

    queue: str
    process: subprocess.Popen[str]


@pytest.fixture
def celery_worker_factory(tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real `celery worker` processes on the test Redis, each on a fresh queue; stop them after."""
    started: list[WorkerProcess] = []

    def start(**extra_env: str) -> WorkerProcess:
        queue = f"test-{uuid.uuid4().hex[:12]}"
        log = tmp_path / f"worker-{queue}.log"
        argv = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "-Q", queue,
                "--concurrency", "1", "--pool", "prefork", "--without-mingle", "--without-gossip",
                "--loglevel", "INFO", "--logfile", str(log)]  # fmt: skip
        env = {**os.environ, **extra_env}
        process = subprocess.Popen(argv, cwd=REPO, env=env, text=True, start_new_session=True)
        worker = WorkerProcess(queue=queue, process=process)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.process.send_signal(signal.SIGTERM)
        try:
            worker.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.process.pid, signal.SIGKILL)
            worker.process.wait()


@pytest.fixture
def celery_worker_process(celery_worker_factory) -> WorkerProcess:
    """One real worker consuming a queue of its own."""
    return celery_worker_factory()


@pytest.fixture(scope="session")
def chromium():
    """A headless Debian Chromium driven by Playwright (no browser download: the system one is used)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; Django's ORM calls in the test are still sync.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium, request):
    """A fresh browser context and page; a screenshot of its last state is kept under .artifacts/."""
    context = chromium.new_context()
    page = context.new_page()
    try:
        yield page
    finally:
        artifacts = REPO / ".artifacts"
        artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(artifacts / f"{request.node.name}.png"), full_page=True)
        context.close()


@pytest.fixture(autouse=True)
def fresh_pod_security_policies() -> Iterator[None]:
    """Each test reads the namespaces' pod security from its database, not from a copy an earlier test
    left in the process cache (test transactions never commit, so they never bump the version)."""
    from access import podsecurity

    podsecurity.reset_process_cache()
    yield
    podsecurity.reset_process_cache()
