"""The process kubelet end to end: real processes in pod sandboxes, driven through the real kubectl.

Each test applies pods as a user would and waits for what a real kubelet would show: phases, exit codes and
reasons, logs, DNS between pods, volumes shared as on a cluster, in-cluster access to the API server, the
image map's ErrImagePull, SIGTERM on deletion and OOMKilled past a memory limit.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.kubelet.process.runtime import HostService
from kubesim.processes import ProcessOptions
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator

NAMESPACE = "team-a"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    root = tmp_path_factory.mktemp("process-kubelet")
    options = ProcessOptions(root=root / "pods", image_map=root / "image-map.yaml", base=Path.cwd())
    # kubectl caches discovery per host and port; a port reused from an earlier run must not answer for us
    os.environ["KUBECACHEDIR"] = str(root / "kubectl-cache")
    with running_simulator(
        argo=True, https=True, auth=True, namespaces=[NAMESPACE], processes=options
    ) as sim:
        assert sim.kubelet.processes is not None, "the process kubelet did not start (see the warning above)"
        yield sim


def kubectl(sim: Simulator, *args: str, stdin: str | None = None, check: bool = True) -> str:
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(sim.kubeconfig_path), "--namespace", NAMESPACE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def apply(sim: Simulator, *documents: dict[str, Any]) -> None:
    kubectl(sim, "apply", "-f", "-", stdin=yaml.safe_dump_all(documents))


def pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "python:3.11", "command": command, **spec.pop("container", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": spec.pop("labels", {"app": name})},
        "spec": {"restartPolicy": "Never", "containers": [container], **spec},
    }


def wait_for(condition: Callable[[], Any], what: str, within: float = 60.0) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def status(sim: Simulator, name: str) -> dict[str, Any]:
    return sim.store.get("pods", name, NAMESPACE).get("status") or {}


def finished(sim: Simulator, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: status(sim, name) if status(sim, name).get("phase") in ("Succeeded", "Failed") else None,
        f"pod {name} to finish",
    )


def terminated(pod_status: dict[str, Any]) -> dict[str, Any]:
    return pod_status["containerStatuses"][0]["state"]["terminated"]


def test_a_pod_runs_its_command_with_exactly_its_environment(cluster: Simulator) -> None:
    script = (
        "import json, os, socket\n"
        "print(json.dumps({'env': dict(os.environ), 'host': socket.gethostname(), 'cwd': os.getcwd()}))"
    )
    apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": NAMESPACE},
            "data": {"RATE": "0.5"},
        },
        pod(
            "env",
            ["python", "-c", script],
            container={
                "env": [
                    {"name": "GREETING", "value": "rate=$(RATE)"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                ],
                "envFrom": [{"configMapRef": {"name": "settings"}}],
                "workingDir": "/work/here",
            },
        ),
    )
    final = finished(cluster, "env")
    assert final["phase"] == "Succeeded"
    assert terminated(final)["reason"] == "Completed"
    report = json.loads(kubectl(cluster, "logs", "env"))
    env = report["env"]
    assert env["GREETING"] == "rate=0.5"
    assert env["RATE"] == "0.5"
    assert env["POD_IP"] == final["podIP"]
    assert env["HOSTNAME"] == "env" == report["host"]
    assert report["cwd"] == "/work/here"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert not set(env) & {"VIRTUAL_ENV", "SECRET_KEY", "DATABASE_URL", "KUBECONFIG"}, (
        "the developer's environment leaked"
    )
    assert final["podIP"].startswith("10.244.")


def test_exit_codes_restarts_and_back_off(cluster: Simulator) -> None:
    apply(cluster, pod("fails", ["sh", "-c", "echo trying; exit 3"], restartPolicy="OnFailure"))
    wait_for(
        lambda: (status(cluster, "fails").get("containerStatuses") or [{}])[0].get("restartCount", 0) >= 1,
        "a restart",
    )
    container = status(cluster, "fails")["containerStatuses"][0]
    last = container["lastState"]["terminated"]
    assert last["exitCode"] == 3
    assert last["reason"] == "Error"
    events = kubectl(cluster, "get", "events", "--field-selector", "involvedObject.name=fails", "-o", "json")
    reasons = {item["reason"] for item in json.loads(events)["items"]}
    assert {"Pulled", "Created", "Started"} <= reasons
    kubectl(cluster, "delete", "pod", "fails", "--wait=false")


def test_pods_reach_each_other_by_dns_and_bind_the_same_port(cluster: Simulator) -> None:
    server = (
        "import socket; s=socket.socket(); s.bind(('0.0.0.0', 2222)); s.listen()\n"
        "c, _ = s.accept(); c.sendall(socket.gethostname().encode()); c.close()"
    )
    documents: list[dict[str, Any]] = []
    for name in ("replica-0", "replica-1"):
        documents.append(pod(name, ["python", "-c", server], labels={"replica": name}))
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"clusterIP": "None", "selector": {"replica": name}, "ports": [{"port": 2222}]},
            }
        )
    client = (
        "import socket, time\n"
        "for name in ('replica-0', 'replica-1.team-a.svc', ):\n"
        "    for _ in range(100):\n"
        "        try:\n"
        "            print(socket.create_connection((name, 2222), timeout=2).recv(100).decode()); break\n"
        "        except OSError: time.sleep(0.2)\n"
    )
    documents.append(pod("client", ["python", "-c", client]))
    apply(cluster, *documents)
    assert finished(cluster, "client")["phase"] == "Succeeded"
    assert kubectl(cluster, "logs", "client").split() == ["replica-0", "replica-1"]
    assert finished(cluster, "replica-0")["phase"] == "Succeeded"


def test_volumes_are_shared_as_on_a_cluster(cluster: Simulator) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "shared", "namespace": NAMESPACE},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    code = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "code", "namespace": NAMESPACE},
        "data": {"write.py": "open('/data/out.txt', 'w').write('written by a pod')"},
    }
    writer = pod(
        "writer",
        ["python", "/app/write.py"],
        volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
            {"name": "app", "configMap": {"name": "code"}},
        ],
        container={
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "app", "mountPath": "/app"}]
        },
    )
    apply(cluster, claim, code, writer)
    assert finished(cluster, "writer")["phase"] == "Succeeded", kubectl(cluster, "logs", "writer")
    reader = pod(
        "reader",
        [
            "sh",
            "-c",
            "cat /data/out.txt; echo; touch /usr/x 2>/dev/null && echo host-writable || echo host-read-only",
        ],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}],
        container={"volumeMounts": [{"name": "data", "mountPath": "/data"}]},
    )
    apply(cluster, reader)
    assert finished(cluster, "reader")["phase"] == "Succeeded"
    assert kubectl(cluster, "logs", "reader").split("\n")[:2] == ["written by a pod", "host-read-only"]
    assert kubectl(cluster, "get", "pvc", "shared", "-o", "jsonpath={.status.phase}") == "Bound"


def test_in_cluster_config_reaches_the_api_server(cluster: Simulator) -> None:
    script = (
        "import os, ssl, urllib.request\n"
        "d = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
        "url = f\"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}/version\"\n"
        "token = open(d + 'token').read()\n"
        "request = urllib.request.Request(url, headers={'Authorization': 'Bearer ' + token})\n"
        "context = ssl.create_default_context(cafile=d + 'ca.crt')\n"
        "print(urllib.request.urlopen(request, context=context).status, open(d + 'namespace').read())\n"
    )
    apply(cluster, pod("incluster", ["python", "-c", script]))
    final = finished(cluster, "incluster")
    assert final["phase"] == "Succeeded", kubectl(cluster, "logs", "incluster")
    assert kubectl(cluster, "logs", "incluster").split() == ["200", NAMESPACE]


def test_an_unmapped_image_waits_in_image_pull_back_off(cluster: Simulator) -> None:
    apply(cluster, pod("private", ["x"], container={"image": "registry.example/team/private:1"}))
    waiting = wait_for(
        lambda: (status(cluster, "private").get("containerStatuses") or [{}])[0]
        .get("state", {})
        .get("waiting", {})
        .get("reason")
        == "ImagePullBackOff"
        and status(cluster, "private")["containerStatuses"][0]["state"]["waiting"],
        "ImagePullBackOff",
    )
    assert waiting["message"] == 'Back-off pulling image "registry.example/team/private:1"'
    events = json.loads(
        kubectl(cluster, "get", "events", "--field-selector", "involvedObject.name=private", "-o", "json")
    )
    failed = [e["message"] for e in events["items"] if e["reason"] == "Failed"]
    assert failed
    assert "image-map.yaml" in failed[0]
    assert "registry.example/team/private:1" in failed[0]
    kubectl(cluster, "delete", "pod", "private")


def test_deletion_sends_sigterm_then_the_pod_goes(cluster: Simulator) -> None:
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))\n"
        "print('ready', flush=True); time.sleep(600)"
    )
    apply(cluster, pod("graceful", ["python", "-c", script]))
    wait_for(lambda: "ready" in kubectl(cluster, "logs", "graceful", check=False), "the pod to start")
    kubectl(cluster, "delete", "pod", "graceful", "--grace-period=30")
    wait_for(lambda: not kubectl(cluster, "get", "pods", "-o", "name").count("pod/graceful"), "the pod to go")


def test_memory_limit_ends_in_oom_killed(cluster: Simulator) -> None:
    grow = "x = []\nwhile True: x.append(bytearray(10 * 2**20))"
    apply(
        cluster,
        pod("hungry", ["python", "-c", grow], container={"resources": {"limits": {"memory": "64Mi"}}}),
    )
    final = finished(cluster, "hungry")
    assert final["phase"] == "Failed"
    assert terminated(final)["reason"] == "OOMKilled"
    assert terminated(final)["exitCode"] == 137


def test_stopping_the_simulator_leaves_no_process(tmp_path: Path) -> None:
    options = ProcessOptions(root=tmp_path / "pods", image_map=tmp_path / "image-map.yaml", base=Path.cwd())
    with running_simulator(kubelet=True, namespaces=[NAMESPACE], processes=options) as sim:
        sim.store.create(pod("sleeper", ["sleep", "600"], container={"image": "busybox"}), NAMESPACE)
        wait_for(lambda: status(sim, "sleeper").get("phase") == "Running", "the pod to run")
    time.sleep(0.5)
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == "sleep\x00600\x00"]
    assert leftovers == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_probes_run_for_real(cluster: Simulator) -> None:
    ready_when_serving = pod(
        "web",
        ["python", "-m", "http.server", "8000"],
        restartPolicy="Always",
        container={
            "ports": [{"name": "http", "containerPort": 8000}],
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1},
        },
    )
    dies_of_liveness = pod(
        "unhealthy",
        ["sleep", "600"],
        restartPolicy="Always",
        container={
            "livenessProbe": {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}
        },
    )
    apply(cluster, ready_when_serving, dies_of_liveness)
    wait_for(
        lambda: (status(cluster, "web").get("containerStatuses") or [{}])[0].get("ready"), "web to be ready"
    )
    ready = [c for c in status(cluster, "web")["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    wait_for(
        lambda: (status(cluster, "unhealthy").get("containerStatuses") or [{}])[0].get("restartCount", 0)
        >= 1,
        "a restart after the liveness probe failed",
    )
    events = json.loads(
        kubectl(cluster, "get", "events", "--field-selector", "involvedObject.name=unhealthy", "-o", "json")
    )
    notes = {(e["reason"], e["message"]) for e in events["items"]}
    assert ("Unhealthy", "Liveness probe failed: ") in notes
    assert ("Killing", "Container main failed liveness probe, will be restarted") in notes
    kubectl(cluster, "delete", "pod", "web", "unhealthy", "--wait=false")


def test_argo_steps_run_for_real_with_outputs_from_files(cluster: Simulator) -> None:
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "real-steps", "namespace": NAMESPACE},
        "spec": {
            "entrypoint": "main",
            "templates": [
                {
                    "name": "main",
                    "steps": [
                        [{"name": "produce", "template": "produce"}],
                        [
                            {
                                "name": "consume",
                                "template": "consume",
                                "arguments": {
                                    "parameters": [
                                        {
                                            "name": "metric",
                                            "value": "{{steps.produce.outputs.parameters.metric}}",
                                        }
                                    ]
                                },
                            }
                        ],
                    ],
                },
                {
                    "name": "produce",
                    "script": {
                        "image": "python:3.11",
                        "command": ["python"],
                        "source": (
                            "import os\n"
                            "os.makedirs('/out/logs')\n"
                            "open('/out/logs/events.txt', 'w').write('epoch 1')\n"
                            "open('/tmp/metric', 'w').write(str(sum(range(10))))\n"
                            "print('produced')\n"
                        ),
                    },
                    "outputs": {
                        "parameters": [{"name": "metric", "valueFrom": {"path": "/tmp/metric"}}],
                        "artifacts": [{"name": "tensorboard", "path": "/out/logs"}],
                    },
                },
                {
                    "name": "consume",
                    "inputs": {"parameters": [{"name": "metric"}]},
                    "container": {
                        "image": "busybox",
                        "command": ["sh", "-c", "echo got {{inputs.parameters.metric}}"],
                    },
                },
            ],
        },
    }
    apply(cluster, workflow)
    phase = wait_for(
        lambda: (cluster.store.get("workflows", "real-steps", NAMESPACE).get("status") or {}).get("phase")
        in ("Succeeded", "Failed", "Error")
        and cluster.store.get("workflows", "real-steps", NAMESPACE)["status"],
        "the workflow to finish",
    )
    nodes = phase["nodes"].values()
    assert phase["phase"] == "Succeeded", [n.get("message") for n in nodes]
    produce = next(n for n in nodes if n.get("displayName") == "produce")
    assert produce["outputs"]["parameters"][0]["value"] == "45"
    assert produce["outputs"]["result"] == "produced"
    key = produce["outputs"]["artifacts"][0]["s3"]["key"]
    root = cluster.processes.root if cluster.processes else Path()
    assert (root / "artifacts" / key).is_file()
    consume = next(n for n in nodes if n.get("displayName") == "consume")
    assert kubectl(cluster, "logs", consume["podName" if "podName" in consume else "id"]).strip() == "got 45"


def test_exec_cp_and_port_forward_reach_the_real_process(cluster: Simulator, tmp_path: Path) -> None:
    apply(
        cluster,
        pod("served", ["python", "-m", "http.server", "8000", "--directory", "/tmp"], restartPolicy="Always"),
    )
    wait_for(lambda: status(cluster, "served").get("phase") == "Running", "the pod to run")
    exec_result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig_path), "-n", NAMESPACE, "exec", "served", "--",
         "sh", "-c", "echo $HOSTNAME; exit 3"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert exec_result.stdout.strip() == "served"
    assert exec_result.returncode == 3
    local = tmp_path / "page.html"
    local.write_text("<h1>copied in</h1>")
    kubectl(cluster, "cp", str(local), f"{NAMESPACE}/served:/tmp/page.html")
    assert kubectl(cluster, "exec", "served", "--", "cat", "/tmp/page.html") == "<h1>copied in</h1>"
    forward = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig_path), "-n", NAMESPACE, "port-forward",
         "pod/served", ":8000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        port = int(line.split("127.0.0.1:")[1].split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/page.html", timeout=10) as response:
            assert response.read() == b"<h1>copied in</h1>"
    finally:
        forward.terminate()
        forward.wait(timeout=10)
    kubectl(cluster, "delete", "pod", "served", "--wait=false")


def test_a_cluster_ip_service_reaches_its_pods(cluster: Simulator) -> None:
    server = pod(
        "backend",
        ["python", "-m", "http.server", "8000"],
        restartPolicy="Always",
        labels={"app": "backend"},
        container={"ports": [{"name": "http", "containerPort": 8000}]},
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "backend", "namespace": NAMESPACE},
        "spec": {"selector": {"app": "backend"}, "ports": [{"port": 80, "targetPort": "http"}]},
    }
    client = (
        "import time, urllib.request\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        print(urllib.request.urlopen('http://backend.team-a.svc/', timeout=2).status); break\n"
        "    except OSError: time.sleep(0.2)\n"
    )
    apply(cluster, server, service)
    wait_for(lambda: status(cluster, "backend").get("phase") == "Running", "the backend to run")
    apply(cluster, pod("caller", ["python", "-c", client]))
    assert finished(cluster, "caller")["phase"] == "Succeeded"
    assert kubectl(cluster, "logs", "caller").strip() == "200"
    kubectl(cluster, "delete", "pod", "backend", "--wait=false")


def test_a_native_sidecar_serves_the_pods_container_and_stops_with_it(cluster: Simulator) -> None:
    client = (
        "import time, urllib.request\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        print(urllib.request.urlopen('http://127.0.0.1:9000/', timeout=2).status); break\n"
        "    except OSError: time.sleep(0.1)\n"
    )
    manifest = pod("with-sidecar", ["python", "-c", client])
    manifest["spec"]["initContainers"] = [
        {"name": "server", "image": "python:3.11", "restartPolicy": "Always",
         "command": ["python", "-m", "http.server", "9000"]},
    ]  # fmt: skip
    apply(cluster, manifest)
    final = finished(cluster, "with-sidecar")
    assert final["phase"] == "Succeeded"
    assert kubectl(cluster, "logs", "with-sidecar", "-c", "main").strip() == "200"
    assert "terminated" in final["initContainerStatuses"][0]["state"]


def test_pods_reach_a_service_served_on_this_machine(tmp_path: Path) -> None:
    """--expose-host: the dev stack's webhook listener (Trainer's progress endpoint) is off the cluster."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"from the host")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    exposed = HostService("infra", "listener", 443, "127.0.0.1", server.server_address[1])
    options = ProcessOptions(
        root=tmp_path / "pods", image_map=tmp_path / "image-map.yaml", base=Path.cwd(), exposed=(exposed,)
    )
    script = "import urllib.request; print(urllib.request.urlopen('http://listener.infra.svc:443/').read().decode())"
    try:
        with running_simulator(kubelet=True, namespaces=[NAMESPACE], processes=options) as sim:
            sim.store.create(pod("caller", ["python", "-c", script]), NAMESPACE)
            assert finished(sim, "caller")["phase"] == "Succeeded", sim.kubelet.logs.text(
                NAMESPACE, "caller", "main"
            )
            assert sim.kubelet.logs.text(NAMESPACE, "caller", "main") == "from the host\n"
    finally:
        server.shutdown()


def test_what_a_container_writes_to_its_termination_log_is_its_termination_message(
    cluster: Simulator,
) -> None:
    write = "open('/dev/termination-log', 'w').write('model saved to /out'); raise SystemExit(3)"
    apply(
        cluster,
        pod("reporter", ["python3", "-c", write]),
        pod("custom", ["python3", "-c", "open('/tmp/why', 'w').write('done')"],
            container={"terminationMessagePath": "/tmp/why"}),
        pod("fallback", ["python3", "-c", "print('first'); print('last words'); raise SystemExit(1)"],
            container={"terminationMessagePolicy": "FallbackToLogsOnError"}),
    )  # fmt: skip
    reported = terminated(finished(cluster, "reporter"))
    assert (reported["exitCode"], reported["message"]) == (3, "model saved to /out")
    assert terminated(finished(cluster, "custom"))["message"] == "done"
    assert terminated(finished(cluster, "fallback"))["message"] == "first\nlast words"
