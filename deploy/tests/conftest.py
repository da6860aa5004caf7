"""The deploy tests: shared renderings, and the opt-in for the real-cluster suite.

`cluster` tests (test_cluster_e2e.py) talk to a real cluster named by KUBECONFIG, with the chart installed.
They never run by accident: unless the run asks for them with a marker expression naming `cluster`
(`pytest -m cluster deploy/tests`), they are deselected, so `make test` neither runs nor counts them; asked
for without KUBECONFIG, they are skipped with the reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .manifests import REPO, Manifest, load_values, render_chart

CLUSTER_MARKER = "cluster"


def cluster_tests_requested(markexpr: str) -> bool:
    """Whether a `-m` expression asks for the cluster tests: `cluster`, `cluster and …`, not `not cluster`."""
    return re.search(rf"(?<!not )\b{CLUSTER_MARKER}\b", markexpr) is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cluster_items = [item for item in items if item.get_closest_marker(CLUSTER_MARKER)]
    if not cluster_items:
        return
    if not cluster_tests_requested(config.getoption("markexpr") or ""):
        config.hook.pytest_deselected(items=cluster_items)
        items[:] = [item for item in items if not item.get_closest_marker(CLUSTER_MARKER)]
        return
    if not os.environ.get("KUBECONFIG"):
        reason = "cluster tests need KUBECONFIG naming a cluster with the chart installed"
        skip = pytest.mark.skip(reason=reason)
        for item in cluster_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def default_manifests() -> list[Manifest]:
    return render_chart()


@pytest.fixture(scope="session")
def production_manifests() -> list[Manifest]:
    return render_chart(load_values("production"))


@pytest.fixture(scope="session")
def collected_static(tmp_path_factory) -> Path:
    """STATIC_ROOT after `manage.py collectstatic`, run as the image build runs it (no database, no Redis)."""
    root = tmp_path_factory.mktemp("static")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deploy.tests.static_settings",
        "TEST_STATIC_ROOT": str(root),
        "SECRET_KEY": "collectstatic-only",
        "DEBUG": "false",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return root
