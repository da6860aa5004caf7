"""examples/training's scripts, run for real with the frameworks virtualenv (.venv-frameworks): each replica
of an example manifest is a local process with the environment our operator builds for its pod.

The operator's own code (`jobs.manifests.desired_pods`) turns examples/<kind>-train.yaml into pods; the test
harness then moves them onto this machine: the replicas' host names become 127.0.0.1, each replica gets a
port of its own (they all listen on one address here, where a cluster gives each pod its own IP), and the
containers' mount paths become local folders. Nothing else of the environment changes, so a framework that
refuses what the operator writes fails here.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from jobs import conf
from jobs.frameworks import Framework, framework_for
from jobs.manifests import desired_pods
from jobs.validation import validate

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TRAINING = EXAMPLES / "training"
FRAMEWORKS_PYTHON = REPO / ".venv-frameworks" / "bin" / "python"
RUN_TIMEOUT_SECONDS = 240.0
# Variables that carry a replica's address and, separately, its port: the port is the one of that replica.
PORT_OF_ADDRESS = {"COORDINATOR_ADDRESS": "COORDINATOR_PORT", "MASTER_ADDR": "MASTER_PORT"}


@dataclass
class Replica:
    """One pod of a job, as a local process: its name, argv and environment."""

    name: str
    argv: list[str]
    env: dict[str, str]


@dataclass
class Finished:
    name: str
    returncode: int
    output: str

    @property
    def result(self) -> dict[str, Any]:
        """The script's closing `RESULT {json}` line."""
        lines = [line for line in self.output.splitlines() if line.startswith("RESULT ")]
        assert lines, f"{self.name} printed no RESULT line:\n{self.output[-4000:]}"
        return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.fixture(scope="module")
def frameworks_python() -> Path:
    if not FRAMEWORKS_PYTHON.exists():
        pytest.fail(
            f"{FRAMEWORKS_PYTHON.relative_to(REPO)} is missing: run `make .venv-frameworks/.installed`",
            pytrace=False,
        )
    return FRAMEWORKS_PYTHON


@pytest.fixture
def wall_times(capsys: pytest.CaptureFixture[str]) -> Iterator[list[str]]:
    """Each run's wall time (all its processes at once), printed uncaptured after the test: the figures the
    issue asks for."""
    rows: list[str] = []
    yield rows
    with capsys.disabled():
        for row in rows:
            print(f"\n  wall time: {row}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def operator_pods(example: str, kind: str) -> tuple[Framework, list[dict[str, Any]]]:
    """The pods our operator creates for the job in `examples/<example>`, as it configures itself here."""
    documents = [doc for doc in yaml.safe_load_all((EXAMPLES / example).read_text()) if doc]
    job = next(doc for doc in documents if doc.get("kind") == kind)
    assert validate(job) == [], f"{example} is not a valid {kind}"
    framework = framework_for(kind, cluster_domain=conf.cluster_domain())
    return framework, desired_pods(job, framework)


# --- test harness: a job's pods as processes on one machine -------------------------------------------------


def on_loopback(pods: list[dict[str, Any]], container_name: str, tmp_path: Path) -> list[Replica]:
    """The framework container of each pod, moved onto 127.0.0.1.

    Every mention of a replica's host name (bare, `<name>.<ns>.svc[.<domain>]`, with or without `:port`)
    becomes 127.0.0.1, and a port that goes with one becomes that replica's own port; an `*_ADDRESS`/`*_ADDR`
    variable's `*_PORT` partner likewise. Mount paths in the argv become folders: the code ConfigMap is
    examples/training, any other volume a folder under `tmp_path`.
    """
    port_of = {pod["metadata"]["name"]: free_port() for pod in pods}
    names = "|".join(re.escape(name) for name in sorted(port_of, key=len, reverse=True))
    mention = re.compile(rf"(?<![\w.-])(?P<host>{names})(?:\.[a-z0-9-]+)*(?::(?P<port>\d+))?(?![\w-])")

    def local(value: str) -> str:
        return mention.sub(
            lambda m: "127.0.0.1" + (f":{port_of[m['host']]}" if m["port"] else ""),
            value,
        )

    replicas = []
    for pod in pods:
        spec = pod["spec"]
        container = next(c for c in spec["containers"] if c["name"] == container_name)
        assert all("value" in item for item in container.get("env", [])), "only literal values are expected"
        written = {item["name"]: item["value"] for item in container.get("env", [])}
        env = {name: local(value) for name, value in written.items()}
        for address, port in PORT_OF_ADDRESS.items():
            if written.get(address) in port_of and port in written:
                env[port] = str(port_of[written[address]])
        volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
        mounts = {}
        for mount in container.get("volumeMounts", []):
            source = volumes[mount["name"]]
            mounts[mount["mountPath"]] = (
                TRAINING if "configMap" in source else tmp_path / "volumes" / mount["name"]
            )
        argv = [*container.get("command", []), *container.get("args", [])]
        for path, folder in mounts.items():
            folder.mkdir(parents=True, exist_ok=True)
            argv = [re.sub(rf"(?<![\w/]){re.escape(path)}(?=/|$)", str(folder), word) for word in argv]
        name = pod["metadata"]["name"]
        home = tmp_path / "home" / name
        home.mkdir(parents=True)
        # What a container has beside its pod's variables: a PATH, its own HOME (Keras writes there on
        # import) and HOSTNAME, the pod's name.
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "HOSTNAME": name, **env}
        replicas.append(Replica(name, argv, env))
    return replicas


def run_replicas(replicas: list[Replica], python: Path, cwd: Path) -> list[Finished]:
    """Start every replica at once (`python` runs their `python`), wait for all, return what each printed."""
    cwd.mkdir(parents=True, exist_ok=True)
    running = []
    for replica in replicas:
        assert replica.argv[0] in ("python", "python3"), replica.argv
        log = (cwd / f"{replica.name}.log").open("w+")
        process = subprocess.Popen(
            [str(python), *replica.argv[1:]], env=replica.env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT
        )
        running.append((replica, process, log))
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    finished = []
    for replica, process, log in running:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other_replica, other, _ in running:
                if other.poll() is None:
                    print(f"{other_replica.name}: still running after {RUN_TIMEOUT_SECONDS:.0f} s, killed")
                    other.kill()
            process.wait()
        log.seek(0)
        finished.append(Finished(replica.name, process.returncode, log.read()))
        log.close()
    for done in finished:
        assert done.returncode == 0, f"{done.name} exited {done.returncode}:\n{done.output[-4000:]}"
    return finished


def run_example(
    example: str, kind: str, python: Path, tmp_path: Path, wall_times: list[str]
) -> list[Finished]:
    framework, pods = operator_pods(example, kind)
    replicas = on_loopback(pods, framework.container_name, tmp_path)
    started = time.monotonic()
    finished = run_replicas(replicas, python, tmp_path / "run")
    wall_times.append(f"{example}: {len(replicas)} processes, {time.monotonic() - started:.1f} s")
    return finished


def scalars(python: Path, logdir: Path, tag: str) -> dict[int, float]:
    """Step → value of `tag` in the event files under `logdir`, as TensorBoard's own reader reads them (in the
    frameworks virtualenv: here `tensorboard` is our app)."""
    reader = (
        "import json, sys\n"
        "from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator\n"
        "from tensorboard.util.tensor_util import make_ndarray\n"
        "events = EventAccumulator(sys.argv[1]).Reload()\n"
        "values = {e.step: float(make_ndarray(e.tensor_proto)) for e in events.Tensors(sys.argv[2])}\n"
        "print(json.dumps(values))\n"
    )
    read = subprocess.run(
        [str(python), "-c", reader, str(logdir), tag], capture_output=True, text=True, cwd=logdir, timeout=120
    )
    assert read.returncode == 0, read.stderr[-4000:]
    return {int(step): value for step, value in json.loads(read.stdout).items()}


# --- the tests -----------------------------------------------------------------------------------------


def test_the_operators_tf_config_trains_one_keras_model_across_chief_and_workers(
    frameworks_python, tmp_path, wall_times
):
    finished = run_example("tfjob-train.yaml", "TFJob", frameworks_python, tmp_path, wall_times)
    results = {done.name: done.result for done in finished}
    assert sorted(result["task"] for result in results.values()) == ["chief:0", "worker:0", "worker:1"]
    for result in results.values():
        assert result["replicas_in_sync"] == 3, "MultiWorkerMirroredStrategy found every replica in TF_CONFIG"
        assert result["loss_last"] < result["loss_first"] / 2
    assert len({result["weights_sha256"] for result in results.values()}) == 1, results
    chief = next(result for result in results.values() if result["task"] == "chief:0")
    logged = scalars(frameworks_python, tmp_path / "volumes" / "logs" / "tf-train" / "train", "loss")
    assert sorted(logged) == [1, 2, 3, 4, 5]
    assert logged[1] == pytest.approx(chief["loss_first"], rel=1e-6)
    assert logged[5] == pytest.approx(chief["loss_last"], rel=1e-6)


def test_the_operators_coordinator_joins_jax_processes_for_a_sum_across_them(
    frameworks_python, tmp_path, wall_times
):
    finished = run_example("jaxjob-train.yaml", "JAXJob", frameworks_python, tmp_path, wall_times)
    results = [done.result for done in finished]
    assert sorted(result["process"] for result in results) == [0, 1]
    for result in results:
        assert result["processes"] == 2
        assert result["psum"] == result["expected_psum"] == 1.0 + 2.0
        assert result["loss_last"] < result["loss_first"] / 2
    assert len({result["weights_sha256"] for result in results}) == 1, results


def test_the_operators_master_and_ranks_build_one_xgboost_model_through_the_tracker(
    frameworks_python, tmp_path, wall_times
):
    finished = run_example("xgboostjob-train.yaml", "XGBoostJob", frameworks_python, tmp_path, wall_times)
    results = [done.result for done in finished]
    assert sorted(result["rank"] for result in results) == [0, 1, 2]
    for result in results:
        assert result["world_size"] == 3
        assert result["logloss_last"] < result["logloss_first"]
    assert len({result["model_sha256"] for result in results}) == 1, results


def load_sweep_trial() -> Any:
    """examples/training/sweep_trial.py as a module (standard library only), for its generated data."""
    spec = importlib_util.spec_from_file_location("sweep_trial", TRAINING / "sweep_trial.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib_util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validation_loss_in_closed_form(learning_rate: float, l2: float, steps: int, seed: int = 7) -> float:
    """The trial's metric without its loop: gradient descent from w = 0 on a quadratic reaches
    w_t = (I - (I - lr·H)^t) w*, with H = 2/n XᵀX + 2·l2·I and w* = H⁻¹ 2/n Xᵀy."""
    train_x, train_y, validation_x, validation_y = (
        np.array(part) for part in load_sweep_trial().make_data(seed)
    )
    count, features = train_x.shape
    hessian = 2.0 / count * train_x.T @ train_x + 2.0 * l2 * np.eye(features)
    optimum = np.linalg.solve(hessian, 2.0 / count * train_x.T @ train_y)
    contraction = np.linalg.matrix_power(np.eye(features) - learning_rate * hessian, steps)
    weights = optimum - contraction @ optimum
    return float(np.mean((validation_x @ weights - validation_y) ** 2))


@pytest.mark.parametrize(
    ("learning_rate", "l2", "steps"),
    [(0.1, 0.0, 50), (0.02, 0.1, 30)],
    ids=["lr0.1-l2_0", "lr0.02-l2_0.1"],
)
def test_a_sweep_trial_reports_the_metric_computed_directly(
    frameworks_python, tmp_path, wall_times, learning_rate, l2, steps
):
    metric_file = tmp_path / "outputs" / "loss"
    argv = ["python", str(TRAINING / "sweep_trial.py"), f"--learning-rate={learning_rate}", f"--l2={l2}",
            f"--steps={steps}", f"--metric-file={metric_file}"]  # fmt: skip
    started = time.monotonic()
    [done] = run_replicas([Replica("trial", argv, {"PATH": "/usr/bin:/bin"})], frameworks_python, tmp_path)
    wall_times.append(
        f"sweep_trial.py lr={learning_rate} l2={l2}: 1 process, {time.monotonic() - started:.1f} s"
    )
    written = float(metric_file.read_text())
    assert written == done.result["validation_loss"]
    assert written == pytest.approx(validation_loss_in_closed_form(learning_rate, l2, steps), rel=1e-9)


def test_the_sweep_trial_needs_no_framework_and_its_two_settings_differ(tmp_path):
    """Any Python image runs it (`python:*` maps to a plain Python 3): here the test's own interpreter."""
    metrics = []
    for learning_rate, l2, steps in [(0.1, 0.0, 50), (0.02, 0.1, 30)]:
        argv = ["python", str(TRAINING / "sweep_trial.py"), f"--learning-rate={learning_rate}", f"--l2={l2}",
                f"--steps={steps}"]  # fmt: skip
        [done] = run_replicas(
            [Replica("trial", argv, {"PATH": "/usr/bin:/bin"})], Path(sys.executable), tmp_path
        )
        metrics.append(done.result["validation_loss"])
    assert metrics[0] == pytest.approx(validation_loss_in_closed_form(0.1, 0.0, 50), rel=1e-9)
    assert metrics[0] < metrics[1], "the larger step without a penalty fits better in these steps"


def test_tensorboard_serves_the_scalars_the_script_wrote(frameworks_python, tmp_path, wall_times):
    logdir = tmp_path / "logs"
    argv = [
        "python",
        str(TRAINING / "tensorboard_scalars.py"),
        f"--logdir={logdir}",
        "--run=train",
        "--steps=5",
    ]
    started = time.monotonic()
    [done] = run_replicas([Replica("writer", argv, {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})],
                          frameworks_python, tmp_path)  # fmt: skip
    port = free_port()
    server = subprocess.Popen(
        [str(frameworks_python.parent / "tensorboard"), f"--logdir={logdir}", "--host=127.0.0.1",
         f"--port={port}", "--reload_interval=1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=(tmp_path / "tensorboard.log").open("w"),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    try:
        runs = wait_for_runs(f"http://127.0.0.1:{port}", ["train"], deadline=time.monotonic() + 120)
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run=train&tag=loss", timeout=10
        ) as response:
            served = {step: value for _, step, value in json.load(response)}
    finally:
        server.terminate()
        server.wait(timeout=30)
    wall_times.append(
        f"tensorboard_scalars.py + a TensorBoard serving it: {time.monotonic() - started:.1f} s"
    )
    assert runs == ["train"]
    assert sorted(served) == [1, 2, 3, 4, 5]
    assert served[1] == pytest.approx(done.result["loss_first"], rel=1e-6)
    assert served[5] == pytest.approx(done.result["loss_last"], rel=1e-6)


def wait_for_runs(base_url: str, wanted: list[str], deadline: float) -> list[str]:
    """TensorBoard's `/data/runs` once it lists `wanted` (it loads event files in the background)."""
    runs: list[str] = []
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/data/runs", timeout=5) as response:
                runs = json.load(response)
        except OSError:
            runs = []
        if runs == wanted:
            break
        time.sleep(0.5)
    return runs


def test_the_harness_moves_every_replica_address_onto_loopback_and_nothing_else(tmp_path):
    """The rewrite the tests above rely on: every host name of the job goes, every other value stays."""
    framework, pods = operator_pods("tfjob-train.yaml", "TFJob")
    replicas = on_loopback(pods, framework.container_name, tmp_path)
    cluster = json.loads(replicas[0].env["TF_CONFIG"])["cluster"]
    addresses = [address for group in cluster.values() for address in group]
    assert len(addresses) == 3
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", address) for address in addresses), addresses
    assert len(set(addresses)) == 3
    assert {json.dumps(json.loads(r.env["TF_CONFIG"])["task"]) for r in replicas} == {
        '{"type": "chief", "index": 0}',
        '{"type": "worker", "index": 0}',
        '{"type": "worker", "index": 1}',
    }
    assert {json.loads(r.env["TF_CONFIG"])["environment"] for r in replicas} == {"cloud"}
    assert all("/app/" not in " ".join(replica.argv) for replica in replicas)
    _, xgb_pods = operator_pods("xgboostjob-train.yaml", "XGBoostJob")
    xgb = on_loopback(xgb_pods, "xgboost", tmp_path / "xgb")
    assert {replica.env["MASTER_ADDR"] for replica in xgb} == {"127.0.0.1"}
    assert {replica.env["WORLD_SIZE"] for replica in xgb} == {"3"}
    assert sorted(replica.env["RANK"] for replica in xgb) == ["0", "1", "2"]
    assert xgb[0].env["WORKER_ADDRS"] == "127.0.0.1,127.0.0.1"
    assert len({replica.env["MASTER_PORT"] for replica in xgb}) == 1
