"""Dashboard pages with big data: server-side render time and queries per page.

    .venv/bin/python bench/dashboard_pages.py [--jobs 100000] [--trials 10000] [--repeat 15]

Fills a fresh PostgreSQL database (DASHBOARD_BENCH_DATABASE, default argoml_dashboard_bench on
127.0.0.1:5432; dropped, created and migrated) with --jobs training jobs over 20 namespaces (bulk_create),
one sweep of --trials trials (TPE, so the importances are computed too) among 2,000 others, 500
TensorBoards and 1,000 GC runs with 20,000 deletions; then renders each page through Django's test client
(middleware, view, template: everything but the network) --repeat times, as a superuser and as a user
granted 3 namespaces, and prints the median and worst time and the number of queries. Target: list pages
under 300 ms with a constant number of queries.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")

NAMESPACES = [f"team-{i:02d}" for i in range(20)]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 5000


def fresh_database(name: str) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def mirror(name: str, namespace: str, at: datetime) -> dict[str, Any]:
    return {"uid": str(uuid.uuid4()), "namespace": namespace, "name": name, "resource_version": "1",
            "created_at": at, "updated_at": at}  # fmt: skip


def fill(jobs: int, trials: int) -> dict[str, int]:
    from django.contrib.auth.models import User

    from access.models import NamespaceGrant, Role
    from dashboard.tests.factories import GRID_SPEC, job_spec, trial_rows
    from garbage.models import GCDeletion, GCRun
    from hyperparam.models import Sweep, Trial
    from jobs.models import Replica, TrainingJob, TrainingJobHistory
    from tensorboard.models import Tensorboard

    kinds = ("TFJob", "PyTorchJob", "MXJob")
    phases = ("Succeeded",) * 6 + ("Running", "Running", "Failed", "Created")
    specs = {kind: job_spec(4, kind) for kind in kinds}
    condition = [{"type": "Created", "status": "True", "reason": "JobCreated", "message": "created"}]
    rows = []
    for i in range(jobs):
        # Phase and kind vary within each namespace (i % 20), as they do in real clusters.
        kind, phase = kinds[(i // 20) % 3], phases[(i // 7) % len(phases)]
        at = T0 + timedelta(seconds=30 * i)
        rows.append(TrainingJob(**mirror(f"job-{i:06d}", NAMESPACES[i % 20], at), kind=kind, phase=phase,
                                spec=specs[kind], conditions=condition, replica_summary="Worker 4/4",
                                start_time=at, completion_time=at + timedelta(minutes=20)))  # fmt: skip
        if len(rows) == BATCH:
            TrainingJob.objects.bulk_create(rows)
            rows = []
    TrainingJob.objects.bulk_create(rows)
    job = TrainingJob.objects.filter(namespace=NAMESPACES[0]).order_by("-created_at").first()
    Replica.objects.bulk_create(
        Replica(**mirror(f"{job.name}-worker-{n}", job.namespace, T0), job_id=job.uid, replica_type="worker",
                replica_index=n, phase="Running") for n in range(4)
    )  # fmt: skip
    TrainingJobHistory.objects.bulk_create(
        TrainingJobHistory(resource=job, at=T0, phase=phase) for phase in ("Created", "Running")
    )
    spec = {**GRID_SPEC, "algorithm": {"name": "tpe"}, "maxTrials": trials}
    Sweep.objects.bulk_create(
        Sweep(**mirror(f"sweep-{i:05d}", NAMESPACES[i % 20], T0 + timedelta(minutes=i)), phase="Succeeded",
              algorithm="grid", goal="minimize", metric_name="loss", spec=GRID_SPEC,
              trial_counts={"Succeeded": 12}, trials_total=12, trials_finished=12, trials_planned=12,
              best_metric=0.1, best_trial_index=3)
        for i in range(2000)
    )  # fmt: skip
    fields = {"phase": "Succeeded", "algorithm": "tpe", "goal": "minimize", "metric_name": "loss",
              "spec": spec,
              "trial_counts": {"Succeeded": trials}, "trials_total": trials, "trials_finished": trials,
              "trials_planned": trials}  # fmt: skip
    big = Sweep.objects.create(**mirror("big-sweep", NAMESPACES[0], T0 + timedelta(days=400)), **fields)
    Trial.objects.bulk_create(trial_rows(big, trials), batch_size=BATCH)
    best = Trial.objects.filter(sweep=big).order_by("metric").first()
    Sweep.objects.filter(pk=big.pk).update(best_metric=best.metric, best_trial_index=best.index)
    Tensorboard.objects.bulk_create(
        Tensorboard(**mirror(f"tb-{i}", NAMESPACES[i % 20], T0 + timedelta(minutes=i)), phase="Ready",
                    source_kind="Workflow", source_name=f"wf-{i}") for i in range(500)
    )  # fmt: skip
    runs = GCRun.objects.bulk_create(GCRun(status="succeeded", finished=T0) for _ in range(1000))
    GCDeletion.objects.bulk_create(
        (GCDeletion(run=runs[-1 - i % 10], kind="Pod", namespace=NAMESPACES[i % 20], name=f"pod-{i}",
                    uid=str(i), reason="WorkflowSucceeded", age_seconds=90000.0) for i in range(20000)),
        batch_size=BATCH,
    )  # fmt: skip
    User.objects.create_superuser("admin", "admin@example.com", None)
    user = User.objects.create_user("erin")  # the bench signs users in with force_login
    for namespace in NAMESPACES[:3]:
        NamespaceGrant.objects.create(user=user, namespace=namespace, role=Role.EDITOR)
    return {"job": job.pk, "sweep": big.pk, "run": runs[-1].pk}


def pages(ids: dict[str, int]) -> list[tuple[str, str]]:
    from django.urls import reverse

    from dashboard.pagination import encode_cursor

    old = quote(encode_cursor(T0 + timedelta(days=10), 10_000))
    return [
        ("overview", reverse("dashboard:overview")),
        ("jobs", reverse("dashboard:jobs")),
        ("jobs ?namespace&phase", reverse("dashboard:jobs") + "?namespace=team-01&phase=Failed"),
        ("jobs ?kind&name prefix", reverse("dashboard:jobs") + "?kind=MXJob&name=job-0421"),
        ("jobs, an old page (cursor)", reverse("dashboard:jobs") + f"?after={old}"),
        ("jobs, htmx poll fragment", reverse("dashboard:jobs") + "#hx"),
        ("job page", reverse("dashboard:job", args=[ids["job"]])),
        ("sweeps", reverse("dashboard:sweeps")),
        ("sweep overview", reverse("dashboard:sweep", args=[ids["sweep"]])),
        ("sweep trials (best first)", reverse("dashboard:sweep-tab", args=[ids["sweep"], "trials"])),
        (
            "sweep trials, page 150",
            reverse("dashboard:sweep-tab", args=[ids["sweep"], "trials"]) + "?page=150",
        ),
        ("sweep plots.json (10k trials)", reverse("dashboard:sweep-plots", args=[ids["sweep"]])),
        ("tensorboards", reverse("dashboard:tensorboards")),
        ("gc runs", reverse("dashboard:gc")),
        ("gc run", reverse("dashboard:gc-run", args=[ids["run"]])),
        ("submit", reverse("dashboard:submit")),
    ]


def measure(client: Any, url: str, repeat: int) -> tuple[float, float, int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    headers = {"HTTP_HX_REQUEST": "true"} if url.endswith("#hx") else {}
    url = url.removesuffix("#hx")
    client.get(url, **headers)  # warm: template and query plan caches
    times = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url, **headers)
            body = response.content
            times.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code}")
    return statistics.median(times), max(times), len(queries), len(body)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = fresh_database(
        os.environ.get("DASHBOARD_BENCH_DATABASE", "argoml_dashboard_bench")
    )

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    call_command("migrate", verbosity=0)
    start = time.perf_counter()
    ids = fill(args.jobs, args.trials)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    took = time.perf_counter() - start
    print(f"filled {args.jobs:,} jobs, a {args.trials:,}-trial sweep among 2,000, 500 TensorBoards, "
          f"1,000 GC runs in {took:.1f} s; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    from django.contrib.auth.models import User

    for username in ("admin", "erin"):
        client = Client()
        client.force_login(User.objects.get(username=username))
        who = "superuser (every namespace)" if username == "admin" else "user granted 3 of 20 namespaces"
        print(f"\n{who}\n{'page':<32} {'median ms':>10} {'worst ms':>9} {'queries':>8} {'kB':>7}")
        for label, url in pages(ids):
            median, worst, queries, size = measure(client, url, args.repeat)
            print(f"{label:<32} {median:>10.1f} {worst:>9.1f} {queries:>8} {size / 1000:>7.1f}")


if __name__ == "__main__":
    main()
