"""Admission webhook latency and throughput under gunicorn over TLS (the production server and set-up).

    .venv/bin/python bench/webhook_latency.py [--concurrency 50] [--seconds 2] [--rounds 6] [--rate 250]

Starts the webhook listener, `gunicorn argoml_site.webhook_wsgi` (gthread workers, keep-alive, TLS with a
certificate from webhooks.certs), and drives it from one asyncio process holding `--concurrency`
keep-alive connections.
Two loads, each target in its own phase, repeated `--rounds` times:

- saturated (closed loop): each connection sends its next request as soon as the last is answered, so 50
  requests are always in flight; this gives the throughput, and latencies that are mostly queueing
  (latency = in flight / throughput);
- paced (open loop): the connections together send `--rate` requests/s at fixed times, and a latency
  counts from the time the request was due, so waiting behind a slow answer is included.

Targets:

- GET /healthz, a trivial Django JSON view: the baseline;
- POST /webhooks/validate with a 5 KB AdmissionReview of a TFJob;
- POST /webhooks/mutate with a 5 KB AdmissionReview of a Pod that two injection rules select.

Every answer is checked (HTTP 200, the review's uid, `allowed: true`, and for mutate a JSONPatch that, applied
to the Pod, gives every container the rule's WANDB_API_KEY from its Secret, the `registry` image pull Secret
and the rule's label): a wrong answer or a broken connection is counted as an error, apart from the
latencies, and makes the script exit non-zero. Answers byte-identical to one already checked are not
decoded again, so checking adds little client CPU.

Prints the gunicorn workers x threads and the load average with every table, p50/p99 latency and requests/s
per target and load, each webhook's saturated throughput as a ratio of /healthz's, the app's own p50/p99
called in-process, how many full garbage collections those calls caused and how long one takes, and the
errors.
Targets: p99 <= 20 ms; ratio >= 0.5. Needs Redis (REDIS_URL, default redis://127.0.0.1:6379/0) and
PostgreSQL (BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/postgres), where a throw-away
database holds two injection rules (the hot path reads no database; the rules are loaded once per worker).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import io
import json
import os
import ssl
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REVIEW_BYTES = 5_000
WARM_UP_SECONDS = 0.5

TARGET_P99_MS = 20.0
TARGET_RATIO = 0.5
IN_APP_CALLS = 3000
IN_APP_WARM_UP = 200
REVIEW_UID = "2f1bd3f6-6d5b-4ad0-9c0e-5c2d1f0e8e11"
INJECTED_ENV = {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}


@dataclass
class Target:
    name: str
    method: str
    path: str
    body: bytes = b""
    #: what is wrong with an answer's body (None: nothing); bodies it passed are remembered
    check: Callable[[bytes], str | None] = lambda body: None
    checked: set[bytes] = field(default_factory=set)
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    paced_latencies: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    client_cpu: list[float] = field(default_factory=list)

    def request(self) -> bytes:
        head = f"{self.method} {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if self.body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(self.body)}\r\n"
        return head.encode() + b"\r\n" + self.body

    def answer_is_right(self, status: int, body: bytes) -> bool:
        """Check one answer; a wrong one is counted in `errors` under what was wrong with it."""
        problem = f"HTTP {status}" if status != 200 else None
        if problem is None and body not in self.checked:
            problem = self.check(body)
            if problem is None:
                self.checked.add(body)
        if problem is not None:
            self.errors[problem[:200]] += 1
        return problem is None


def _padded(document: dict, grow: Callable[[dict, int], None]) -> bytes:
    """`document` as JSON, grown by `grow(document, i)` until it reaches REVIEW_BYTES."""
    index = 0
    while len(encoded := json.dumps(document).encode()) < REVIEW_BYTES:
        grow(document, index)
        index += 1
    return encoded


def tfjob_review() -> bytes:
    def replica(replicas: int) -> dict:
        return {
            "replicas": replicas,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "tensorflow",
                            "image": "registry.example.com/ml/mnist-train:2024.05.01",
                            "command": ["python", "-m", "trainer.task"],
                            "args": ["--epochs=20", "--batch-size=256", "--data=/data/mnist"],
                            "env": [],
                            "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        }
                    ],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "mnist"}}],
                }
            },
        }

    job = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "ml", "labels": {"team": "vision"}},
        "spec": {
            "tfReplicaSpecs": {"Chief": replica(1), "PS": replica(2), "Worker": replica(8)},
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3},
        },
    }

    def grow(review: dict, i: int) -> None:
        for spec in review["request"]["object"]["spec"]["tfReplicaSpecs"].values():
            spec["template"]["spec"]["containers"][0]["env"].append(
                {"name": f"SETTING_{i}", "value": f"v{i}"}
            )

    return _padded(_review(job, {"group": "argoml.io", "version": "v1alpha1", "kind": "TFJob"}), grow)


def pod_review() -> bytes:
    """An Argo workflow Pod as the controller creates it: its executor containers carry the template as
    JSON in ARGO_TEMPLATE, which is what makes such a Pod a few kilobytes."""
    template = {"name": "train", "inputs": {"parameters": []}, "container": {"image": "python:3.11"}}
    executor_env = [
        {"name": "ARGO_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ARGO_CONTAINER_RUNTIME_EXECUTOR", "value": "emissary"},
        {"name": "ARGO_TEMPLATE", "value": ""},
    ]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "sweep-1-",
            "namespace": "ml",
            "labels": {"workflows.argoproj.io/workflow": "sweep-1", "team": "vision"},
            "annotations": {"workflows.argoproj.io/node-name": "sweep-1[0].trial(3)"},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11",
                    "command": ["/var/run/argo/argoexec", "emissary", "--", "python", "train.py"],
                    "env": [{"name": f"SETTING_{i}", "value": f"v{i}"} for i in range(8)],
                    "volumeMounts": [{"name": "var-run-argo", "mountPath": "/var/run/argo"}],
                },
                {"name": "wait", "image": "quay.io/argoproj/argoexec:v3.5.5", "env": executor_env},
            ],
            "initContainers": [
                {
                    "name": "init",
                    "image": "quay.io/argoproj/argoexec:v3.5.5",
                    "env": json.loads(json.dumps(executor_env)),
                }
            ],
            "volumes": [{"name": "var-run-argo", "emptyDir": {}}],
            "restartPolicy": "Never",
            "serviceAccountName": "default",
        },
    }

    def grow(review: dict, i: int) -> None:
        template["inputs"]["parameters"].append({"name": f"param-{i}", "value": f"value-{i}"})
        encoded = json.dumps(template)
        spec = review["request"]["object"]["spec"]
        for container in (spec["containers"][1], spec["initContainers"][0]):
            container["env"][2]["value"] = encoded

    return _padded(_review(pod, {"group": "", "version": "v1", "kind": "Pod"}), grow)


def _review(obj: dict, kind: dict) -> dict:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "2f1bd3f6-6d5b-4ad0-9c0e-5c2d1f0e8e11",
            "kind": kind,
            "resource": {"group": kind["group"], "version": kind["version"], "resource": "x"},
            "name": obj["metadata"].get("name", ""),
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:argo:argo-workflow-controller"},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
        },
    }


def healthz_problem(body: bytes) -> str | None:
    return None if json.loads(body) == {"status": "ok"} else f"unexpected body {body[:100]!r}"


def _allowed_response(body: bytes) -> tuple[dict, str | None]:
    """The AdmissionReview's response, and what is wrong with it as an answer that allows the request."""
    try:
        response = json.loads(body)["response"]
    except (ValueError, KeyError, TypeError):
        return {}, f"not an AdmissionReview: {body[:100]!r}"
    if response.get("uid") != REVIEW_UID:
        return response, f"uid {response.get('uid')!r}, not the review's"
    if response.get("allowed") is not True:
        return response, f"allowed is {response.get('allowed')!r}: {response.get('status')}"
    return response, None


def validate_problem(body: bytes) -> str | None:
    response, problem = _allowed_response(body)
    if problem is None and "patch" in response:
        return "validate answered with a patch"
    return problem


def mutate_problem_for(pod: dict) -> Callable[[bytes], str | None]:
    """The check of a mutate answer for `pod`: the patch must apply and inject what the two rules say."""

    def problem(body: bytes) -> str | None:
        response, wrong = _allowed_response(body)
        if wrong is not None:
            return wrong
        if response.get("patchType") != "JSONPatch":
            return f"patchType {response.get('patchType')!r}"
        try:
            patched = apply_patch(pod, json.loads(base64.b64decode(response["patch"])))
        except (ValueError, KeyError, IndexError, TypeError) as error:
            return f"the patch does not apply: {error}"
        spec = patched["spec"]
        for container in [*spec["containers"], *spec.get("initContainers", [])]:
            if INJECTED_ENV not in container.get("env", []):
                return f"container {container['name']} has no {INJECTED_ENV['name']} from the Secret"
        if {"name": "registry"} not in spec.get("imagePullSecrets", []):
            return "no imagePullSecrets entry for registry"
        if patched["metadata"].get("labels", {}).get("argoml.io/injected") != "1":
            return "no argoml.io/injected label"
        return None

    return problem


def apply_patch(document: dict, operations: list[dict]) -> dict:
    """RFC 6902 add, replace and remove applied to a copy of `document` (what the webhook emits)."""
    result = json.loads(json.dumps(document))
    for operation in operations:
        *parents, last = [
            token.replace("~1", "/").replace("~0", "~") for token in operation["path"].split("/")[1:]
        ]
        target = result
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        op = operation["op"]
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if op == "add":
                target.insert(index, operation["value"])
            elif op == "replace":
                target[index] = operation["value"]
            elif op == "remove":
                del target[index]
            else:
                raise ValueError(f"unexpected op {op!r}")
        elif op in ("add", "replace"):
            target[last] = operation["value"]
        elif op == "remove":
            del target[last]
        else:
            raise ValueError(f"unexpected op {op!r}")
    return result


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Read one HTTP/1.1 response with a Content-Length: its status and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return status, await reader.readexactly(length)


async def _client(
    port: int, context: ssl.SSLContext, target: Target, measure_from: float, stop: float
) -> list[float]:
    """One keep-alive connection sending `target`'s request back to back until `stop`; the latencies of
    the right answers to requests sent from `measure_from` on (before it, the TLS handshake and warm-up).
    A broken connection counts as an error and is opened again."""
    latencies: list[float] = []
    request = target.request()
    while time.perf_counter() < stop:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        except OSError as error:
            target.errors[f"connect: {error}"] += 1
            await asyncio.sleep(0.1)
            continue
        try:
            while (began := time.perf_counter()) < stop:
                writer.write(request)
                status, body = await _answer(reader)
                if target.answer_is_right(status, body) and began >= measure_from:
                    latencies.append(time.perf_counter() - began)
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            target.errors[f"connection: {type(error).__name__}"] += 1
        finally:
            writer.close()
    return latencies


async def _phase(
    port: int, context: ssl.SSLContext, target: Target, concurrency: int, seconds: float
) -> float:
    """Run one phase; returns the client's CPU seconds per measured request."""
    measure_from = time.perf_counter() + WARM_UP_SECONDS
    stop = measure_from + seconds
    cpu = time.process_time()
    results = await asyncio.gather(
        *(_client(port, context, target, measure_from, stop) for _ in range(concurrency))
    )
    cpu = time.process_time() - cpu
    count = sum(len(latencies) for latencies in results)
    for latencies in results:
        target.latencies += latencies
    target.rates.append(count / seconds)
    return cpu / max(count, 1)


async def _paced_client(
    port: int, context: ssl.SSLContext, target: Target, interval: float, first: float, stop: float
) -> list[float]:
    """One keep-alive connection sending a request every `interval` s from `first` until `stop`; each
    latency of a right answer counts from the time its request was due. A broken connection counts as an
    error and ends this connection's share of the phase."""
    latencies: list[float] = []
    request = target.request()
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        due = first
        while due < stop:
            if (wait := due - time.perf_counter()) > 0:
                await asyncio.sleep(wait)
            writer.write(request)
            status, body = await _answer(reader)
            if target.answer_is_right(status, body):
                latencies.append(time.perf_counter() - due)
            due += interval
    except (OSError, asyncio.IncompleteReadError, ValueError) as error:
        target.errors[f"connection: {type(error).__name__}"] += 1
    finally:
        writer.close()
    return latencies


async def _paced_phase(
    port: int, context: ssl.SSLContext, target: Target, concurrency: int, seconds: float, rate: float
) -> None:
    interval = concurrency / rate
    first = time.perf_counter() + WARM_UP_SECONDS
    results = await asyncio.gather(
        *(
            _paced_client(
                port, context, target, interval, first + i * interval / concurrency, first + seconds
            )
            for i in range(concurrency)
        )
    )
    for latencies in results:
        target.paced_latencies += latencies


@contextmanager
def _throwaway_database() -> Iterator[str]:
    """A new PostgreSQL database for this run, dropped afterwards; yields its URL."""
    import psycopg

    server = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    name = f"webhook_bench_{os.getpid()}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield server.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _prepare_database(url: str) -> None:
    """The schema and two injection rules, written through Django in this process."""
    os.environ["DATABASE_URL"] = url
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from webhooks.models import InjectionRule, SecretEnvVar

    workflows = {"matchExpressions": [{"key": "workflows.argoproj.io/workflow", "operator": "Exists"}]}
    wandb = InjectionRule.objects.create(name="wandb", namespaces=["ml", "team-*"], pod_selector=workflows)
    SecretEnvVar.objects.create(rule=wandb, name="WANDB_API_KEY", secret_name="wandb", secret_key="api-key")  # noqa: S106
    InjectionRule.objects.create(
        name="registry", image_pull_secrets=["registry"], labels={"argoml.io/injected": "1"}
    )
    from django.db import connections

    connections.close_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--rate", type=float, default=250.0, help="requests/s of the paced load")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker")
    args = parser.parse_args()

    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1"
    conditions = (
        f"gunicorn {args.workers} workers x {args.threads} threads (gthread, keep-alive, TLS);"
        f" {os.cpu_count()} CPUs shared with the client; {args.concurrency} connections;"
        f" {args.rounds} rounds of {args.seconds:g} s per target and load; paced rate {args.rate:g} req/s"
    )

    with (
        tempfile.TemporaryDirectory(prefix="webhook-bench-") as scratch,
        _throwaway_database() as database_url,
    ):
        directory = Path(scratch)
        _prepare_database(database_url)
        from webhooks import certs
        from webhooks.tests.servers import gunicorn_tls

        bundle = certs.issue(["localhost"], ["127.0.0.1"], now=datetime.now(UTC))
        for name, content in (("ca.crt", bundle.ca), ("tls.crt", bundle.cert), ("tls.key", bundle.key)):
            (directory / name).write_bytes(content)
        pod = pod_review()
        targets = [
            Target("GET /healthz", "GET", "/healthz", check=healthz_problem),
            Target(
                "POST /webhooks/validate (TFJob)",
                "POST",
                "/webhooks/validate",
                tfjob_review(),
                validate_problem,
            ),
            Target(
                "POST /webhooks/mutate (Pod)",
                "POST",
                "/webhooks/mutate",
                pod,
                mutate_problem_for(json.loads(pod)["request"]["object"]),
            ),
        ]
        env = {"DATABASE_URL": database_url, "ALLOWED_HOSTS": "127.0.0.1", "DEBUG": "false"}
        with gunicorn_tls(directory, env=env, workers=args.workers, threads=args.threads) as served:
            context = served.ssl_context()
            load_before = _load_average()
            print(f"settings: {conditions}; load average {load_before}")
            print(f"review sizes: TFJob {len(targets[1].body)} B, Pod {len(targets[2].body)} B")
            for _ in range(args.rounds):
                for target in targets:
                    cpu = asyncio.run(_phase(served.port, context, target, args.concurrency, args.seconds))
                    target.client_cpu.append(cpu)
                    asyncio.run(
                        _paced_phase(served.port, context, target, args.concurrency, args.seconds, args.rate)
                    )
            load_after = _load_average()
        full_collections = gc.get_stats()[2]["collections"]
        service_times = {target.name: _service_times(target) for target in targets}
        full_collections = gc.get_stats()[2]["collections"] - full_collections
        pause_ms, objects = _full_collection()
    print(f"conditions: {conditions}; load average {load_before} at the start, {load_after} at the end")
    _report(targets, args.concurrency, args.rate)
    print("in the app alone (a WSGI call in this process, no network, no concurrency):")
    for name, (p50, p99) in service_times.items():
        print(f"  {name:34} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")
    calls = len(targets) * (IN_APP_CALLS + IN_APP_WARM_UP)
    print(
        f"garbage collection in this process (the app as a worker holds it, plus the benchmark's objects):"
        f" {full_collections} full collections during the {calls} in-app calls; one full collection now"
        f" {pause_ms:.0f} ms over {objects} objects"
    )
    errors = sum(sum(target.errors.values()) for target in targets)
    print(f"errors (wrong answers and broken connections, not in the latencies): {errors}")
    for target in targets:
        for problem, count in target.errors.most_common(5):
            print(f"  {target.name}: {count} x {problem}")
    if errors:
        raise SystemExit(f"{errors} requests were not answered right")


def _load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def _full_collection() -> tuple[float, int]:
    """How long one full garbage collection takes in this process, and over how many tracked objects: the
    rare pause a web worker holding the same app (URLconf, linter schema, rules) sees."""
    objects = len(gc.get_objects())
    began = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - began) * 1000, objects


def _service_times(target: Target, count: int = IN_APP_CALLS) -> tuple[float, float]:
    """p50/p99 of `target` handled by the Django app called directly: what a request costs the server
    itself, apart from TLS, gunicorn, queueing and the other processes on the machine. The webhook
    listener's application, as gunicorn serves it; every answer is checked as the served ones are."""
    from argoml_site.webhook_wsgi import application

    environ = {
        "REQUEST_METHOD": target.method,
        "PATH_INFO": target.path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8443",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(target.body)),
        "wsgi.url_scheme": "https",
        "wsgi.errors": sys.stderr,
    }
    latencies = []
    statuses: list[int] = []

    def start_response(status: str, headers: object) -> None:
        statuses.append(int(status.split()[0]))

    for attempt in range(count + IN_APP_WARM_UP):
        began = time.perf_counter()
        body = b"".join(application({**environ, "wsgi.input": io.BytesIO(target.body)}, start_response))
        elapsed = time.perf_counter() - began
        if not target.answer_is_right(statuses.pop(), body):
            continue
        if attempt >= IN_APP_WARM_UP:  # the first calls load the URLconf, the linter's schema and the rules
            latencies.append(elapsed)
    return _percentiles(latencies)


def _report(targets: list[Target], concurrency: int, rate: float) -> None:
    baseline = statistics.median(targets[0].rates)
    print(
        f"{'right answers only':36} {f'saturated, {concurrency} in flight':>34}"
        f"   {f'paced, {rate:g} req/s':>17}\n"
        f"{'target':36} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} {'ratio':>6}   {'p50 ms':>8} {'p99 ms':>8}"
    )
    ratios_met = paced_met = saturated_met = True
    for target in targets:
        p50, p99 = _percentiles(target.latencies)
        paced_p50, paced_p99 = _percentiles(target.paced_latencies)
        ratio = statistics.median(target.rates) / baseline
        print(
            f"{target.name:36} {p50:8.2f} {p99:8.2f} {statistics.median(target.rates):8.0f} {ratio:6.2f}"
            f"   {paced_p50:8.2f} {paced_p99:8.2f}"
        )
        if target is not targets[0]:
            ratios_met &= ratio >= TARGET_RATIO
            saturated_met &= p99 <= TARGET_P99_MS
            paced_met &= paced_p99 <= TARGET_P99_MS
    cpu = ", ".join(f"{statistics.median(t.client_cpu) * 1e6:.0f}" for t in targets)
    print(f"client CPU per request (us, same order): {cpu}")
    print(f"target ratio >= {TARGET_RATIO:g}: {'met' if ratios_met else 'not met'}")
    print(
        f"target p99 <= {TARGET_P99_MS:g} ms: saturated {'met' if saturated_met else 'not met'}, "
        f"paced {'met' if paced_met else 'not met'}"
    )


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    """p50 and p99 in ms; NaN when there are too few right answers to tell (the errors say why)."""
    if len(latencies) < 2:
        return float("nan"), float("nan")
    cuts = statistics.quantiles(latencies, n=100)
    return cuts[49] * 1000, cuts[98] * 1000


if __name__ == "__main__":
    main()
