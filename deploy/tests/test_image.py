"""The image recipe, tested without building it (no image builder here): the Dockerfile's promises, the
build context .dockerignore leaves, collectstatic as the build runs it, the entrypoint script with stand-in
programs, and the image's health check."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from deploy.healthcheck import probe_url

from .apicalls import production_modules, project_packages
from .manifests import DEPLOY, REPO

DOCKERFILE = (DEPLOY / "Dockerfile").read_text()
ENTRYPOINT = DEPLOY / "docker-entrypoint.sh"


# -- Dockerfile ------------------------------------------------------------------------------------------
def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = [" ".join(line.split()) for line in joined.splitlines()]
    words = [line.split(" ", 1) for line in lines if line and not line.startswith("#")]
    return [(word[0].upper(), word[1] if len(word) > 1 else "") for word in words]


def test_the_image_builds_in_stages_from_a_pinned_python_3_11_slim_bookworm():
    steps = instructions(DOCKERFILE)
    base = next(args for name, args in steps if name == "ARG" and args.startswith("PYTHON_IMAGE="))
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base)
    stages = [args for name, args in steps if name == "FROM"]
    assert stages == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE} AS runtime"]


def test_the_build_installs_wheels_only_and_collects_the_static_files():
    steps = instructions(DOCKERFILE)
    runs = [args for name, args in steps if name == "RUN"]
    assert any("pip install --only-binary=:all: -r /tmp/requirements/requirements.txt" in run for run in runs)
    assert any("manage.py collectstatic --noinput" in run for run in runs)
    copies = [args for name, args in steps if name == "COPY"]
    assert copies.index("requirements.txt constraints.txt /tmp/requirements/") < copies.index(". /app"), (
        "dependencies are installed before the code is copied, so a code change reuses that layer"
    )


def test_the_runtime_runs_as_a_numeric_non_root_user_with_a_health_check():
    runtime = DOCKERFILE.split("AS runtime", 1)[1]
    steps = instructions(runtime)
    args = dict(arg.split("=", 1) for name, arg in steps if name == "ARG")
    user = next(arg for name, arg in steps if name == "USER")
    assert user == "${UID}:${GID}"
    assert int(args["UID"]) >= 10000
    assert int(args["GID"]) >= 10000
    assert ("HEALTHCHECK", '--interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["python", '
            '"/app/deploy/healthcheck.py"]') in steps  # fmt: skip
    assert ("ENTRYPOINT", '["/app/deploy/docker-entrypoint.sh"]') in steps
    assert "PROMETHEUS_MULTIPROC_DIR=/var/run/argoml/metrics" in runtime


# -- the build context ------------------------------------------------------------------------------------
def dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    """(excludes, regex) per .dockerignore line, in order: `**` is any depth, `!` re-includes."""
    patterns = []
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        excludes = not line.startswith("!")
        glob = line.lstrip("!").strip("/")
        regex = re.escape(glob).replace(r"\*\*", "\0").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        patterns.append((excludes, re.compile(regex.replace("\0/", "(.*/)?").replace("\0", ".*"))))
    return patterns


def in_build_context(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether Docker sends `path`: the last pattern matching it or one of its parent folders decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    included = True
    for excludes, pattern in patterns:
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            included = not excludes
    return included


@pytest.fixture(scope="module")
def context() -> set[str]:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    patterns = dockerignore_patterns()
    return {path for path in tracked.stdout.splitlines() if in_build_context(path, patterns)}


def test_the_build_context_has_every_app_and_what_the_processes_run(context):
    for app in project_packages():
        assert f"{app}/__init__.py" in context, app
        for migration in (REPO / app / "migrations").glob("0*.py"):
            assert f"{app}/migrations/{migration.name}" in context
    for needed in ("manage.py", "requirements.txt", "constraints.txt"):
        assert needed in context
    runtime_files = ("docker-entrypoint.sh", "gunicorn.conf.py", "gunicorn_webhooks.conf.py", "wsgi.py")
    for runtime_file in (*runtime_files, "healthcheck.py"):
        assert f"deploy/{runtime_file}" in context


def test_the_build_context_leaves_out_tests_tools_and_local_state(context):
    left_out = ("tests/", "kubesim/", "bench/", "docs/", "deploy/helm/", "deploy/tests/", ".ci/")
    assert not [path for path in context if any(part in f"/{path}" for part in [f"/{p}" for p in left_out])]
    patterns = dockerignore_patterns()
    local_state = (".kube/config", ".dev/admin-credentials", ".venv/bin/python", ".git/config", "staticfiles")
    for path in local_state:
        assert not in_build_context(path, patterns), path


def test_no_production_module_imports_a_test_module_left_out_of_the_image():
    offenders = []
    for name, path in production_modules(project_packages()):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{name} imports {module}" for module in modules if ".tests" in f".{module}"]
    assert not offenders


def test_collectstatic_gathers_the_admin_api_docs_and_dashboard_files(collected_static):
    assert (collected_static / "admin" / "css" / "base.css").is_file()
    assert list(collected_static.glob("drf_spectacular_sidecar/swagger-ui-dist/*.js"))
    dashboard = REPO / "dashboard" / "static"
    for source in dashboard.rglob("*") if dashboard.is_dir() else []:
        if source.is_file():
            assert (collected_static / source.relative_to(dashboard)).is_file(), source


# -- the entrypoint ---------------------------------------------------------------------------------------
@pytest.fixture
def stubs(tmp_path) -> dict[str, Path]:
    """Stand-ins for gunicorn, celery and python that record how they were called; `python` fails as many
    times as the file `python-failures` says before it succeeds."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for program in ("gunicorn", "celery", "python", "echo-args"):
        script = bin_dir / program
        script.write_text(
            textwrap.dedent(
                f"""\
                #!/bin/sh
                echo "{program} $*" >> "{log}"
                failures="{tmp_path}/python-failures"
                if [ "{program}" = python ] && [ -f "$failures" ] && [ "$(cat "$failures")" -gt 0 ]; then
                    echo $(( $(cat "$failures") - 1 )) > "$failures"
                    exit 1
                fi
                """
            )
        )
        script.chmod(0o755)
    return {"bin": bin_dir, "log": log, "root": tmp_path}


def run_entrypoint(stubs: dict[str, Path], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        "PATH": f"{stubs['bin']}:/usr/bin:/bin",
        "ARGOML_APP_DIR": str(stubs["root"]),
        "HOSTNAME": "pod-1",
        **env,
    }
    command = ["sh", str(ENTRYPOINT), *args]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=30, check=False)


def calls(stubs: dict[str, Path]) -> list[str]:
    return stubs["log"].read_text().splitlines() if stubs["log"].exists() else []


def test_the_entrypoint_is_valid_posix_shell():
    assert subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=False).returncode == 0
    assert os.access(ENTRYPOINT, os.X_OK)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "gunicorn --config {root}/deploy/gunicorn.conf.py"),
        (["web"], "gunicorn --config {root}/deploy/gunicorn.conf.py"),
        (["webhooks"], "gunicorn --config {root}/deploy/gunicorn_webhooks.conf.py"),
        (
            ["controller"],
            "celery -A argoml_site worker --queues reconcile --hostname controller@pod-1 --concurrency 2 "
            "--without-mingle --without-gossip --loglevel INFO --pool threads --controllers",
        ),
        (
            ["worker", "--max-tasks-per-child", "100"],
            "celery -A argoml_site worker --queues reconcile,default --hostname worker@pod-1 --concurrency 2 "
            "--without-mingle --without-gossip --loglevel INFO --max-tasks-per-child 100",
        ),
        (
            ["beat"],
            "celery -A argoml_site beat --scheduler django_celery_beat.schedulers:DatabaseScheduler "
            "--loglevel INFO",
        ),
        (["migrate"], "python {root}/manage.py migrate --noinput"),
        (
            ["webhook-certs", "--namespace", "ml"],
            "python {root}/manage.py webhook_certs --namespace ml",
        ),
        (["install-runtimes", "--adopt"], "python {root}/manage.py install_runtimes --adopt"),
        (["manage", "createsuperuser"], "python {root}/manage.py createsuperuser"),
        (["echo-args", "a", "b"], "echo-args a b"),
    ],
)
def test_each_command_starts_its_process(stubs, args, expected):
    result = run_entrypoint(stubs, *args)
    assert result.returncode == 0, result.stderr
    assert calls(stubs) == [expected.format(root=stubs["root"])]


def test_a_worker_takes_its_concurrency_from_the_environment(stubs):
    run_entrypoint(stubs, "worker", CELERY_CONCURRENCY="8", LOG_LEVEL="WARNING")
    assert "--concurrency 8" in calls(stubs)[0]
    assert "--loglevel WARNING" in calls(stubs)[0]


@pytest.mark.parametrize("command", ["web", "controller", "worker"])
def test_processes_that_export_metrics_start_with_no_samples_of_a_previous_container(stubs, command):
    metrics = stubs["root"] / "metrics"
    metrics.mkdir()
    (metrics / "counter_123.db").write_bytes(b"old")
    (metrics / "histogram_456.db").write_bytes(b"old")
    (metrics / "README").write_text("not a sample file")
    run_entrypoint(stubs, command, PROMETHEUS_MULTIPROC_DIR=str(metrics))
    assert sorted(path.name for path in metrics.iterdir()) == ["README"]


def test_wait_for_migrations_checks_until_the_database_is_migrated(stubs):
    (stubs["root"] / "python-failures").write_text("2")
    result = run_entrypoint(stubs, "wait-for-migrations", MIGRATIONS_WAIT_INTERVAL="0")
    assert result.returncode == 0, result.stderr
    assert calls(stubs) == [f"python {stubs['root']}/manage.py migrate --check --noinput"] * 3
    assert "the database is migrated" in result.stdout


def test_wait_for_migrations_gives_up_with_a_reason(stubs):
    (stubs["root"] / "python-failures").write_text("1000")
    result = run_entrypoint(
        stubs, "wait-for-migrations", MIGRATIONS_WAIT_SECONDS="0", MIGRATIONS_WAIT_INTERVAL="0"
    )
    assert result.returncode == 1
    assert "still lacks migrations after 0s; is the migration Job running?" in result.stderr


# -- the health check -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "environ", "url"),
    [
        (["/opt/venv/bin/python", "/opt/venv/bin/gunicorn", "--config", "c.py"], {}, "https://127.0.0.1:8443/healthz"),
        (["gunicorn: master [argoml-web]"], {"GUNICORN_BIND": "0.0.0.0:9000", "GUNICORN_CERTFILE": ""},
         "http://127.0.0.1:9000/healthz"),
        (["/opt/venv/bin/celery", "-A", "argoml_site", "worker"], {"WORKER_METRICS_PORT": "9100"},
         "http://127.0.0.1:9100/healthz"),
        (["/opt/venv/bin/celery", "-A", "argoml_site", "worker"], {"WORKER_METRICS_PORT": "0"}, None),
        (["/opt/venv/bin/celery", "-A", "argoml_site", "beat"], {"WORKER_METRICS_PORT": "9100"}, None),
        (["python", "manage.py", "migrate"], {}, None),
    ],
)  # fmt: skip
def test_the_health_check_probes_what_pid_1_runs(argv, environ, url):
    assert probe_url(argv, environ) == url
