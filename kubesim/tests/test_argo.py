"""The simulated Argo controller, driven through the official client: Workflows in, Argo-shaped status out.

Pods are run by the simulated kubelet on a frozen clock; `sim.run_until` moves time until the workflow ends.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL

GROUP, VERSION, PLURAL = "argoproj.io", "v1alpha1", "workflows"


@pytest.fixture
def sim(kubesim_factory: Callable[..., Simulator]) -> Simulator:
    return kubesim_factory(frozen_clock=True, argo=True)


@pytest.fixture
def custom(sim: Simulator) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(config_file=str(sim.kubeconfig_path)))


@pytest.fixture
def core(sim: Simulator) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(sim.kubeconfig_path)))


def fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def workflow(name: str, entrypoint: str, *templates: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workflow",
        "metadata": {"name": name},
        "spec": {"entrypoint": entrypoint, "templates": list(templates), **spec},
    }


def container(name: str, *inputs: str, outputs: list[str] = (), **extra: Any) -> dict[str, Any]:
    template: dict[str, Any] = {
        "name": name,
        "container": {"image": "trainer:1", "args": [f"{{{{inputs.parameters.{i}}}}}" for i in inputs]},
    }
    if inputs:
        template["inputs"] = {"parameters": [{"name": i} for i in inputs]}
    if outputs:
        template["outputs"] = {
            "parameters": [{"name": o, "valueFrom": {"path": f"/tmp/{o}"}} for o in outputs]
        }
    return {**template, **extra}


def args(**values: Any) -> dict[str, Any]:
    return {"parameters": [{"name": k, "value": v} for k, v in values.items()]}


def submit(custom: client.CustomObjectsApi, manifest: dict[str, Any]) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, manifest)


def read(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    return custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)


def finish(sim: Simulator, custom: client.CustomObjectsApi, name: str, within: float = 600) -> dict[str, Any]:
    done = sim.run_until(
        lambda: read(custom, name).get("status", {}).get("phase") in ("Succeeded", "Failed", "Error"), within
    )
    assert done, f"workflow {name} did not finish: {read(custom, name).get('status', {}).get('phase')}"
    return read(custom, name)


def by_name(wf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["name"]: node for node in wf["status"]["nodes"].values()}


def parameters(node: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in (node.get("outputs") or {}).get("parameters") or []}


def test_a_steps_fan_out_writes_argo_shaped_nodes_and_labels_its_pods(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    sim.argo.script("train", parameters=lambda node: {"loss": str(float(node.inputs["lr"]) * 10)})
    fan_out = {
        "name": "trial",
        "template": "train",
        "arguments": args(lr="{{item.lr}}", layers="{{item.layers}}"),
        "withItems": [{"lr": "0.1", "layers": 2}, {"lr": "0.01", "layers": 3}],
    }
    submit(
        custom,
        workflow(
            "sweep",
            "main",
            {"name": "main", "steps": [[fan_out]]},
            container("train", "lr", "layers", outputs=["loss"]),
        ),
    )
    wf = finish(sim, custom, "sweep")
    nodes = by_name(wf)

    assert wf["status"]["phase"] == "Succeeded"
    assert wf["status"]["startedAt"] <= wf["status"]["finishedAt"]
    assert wf["metadata"]["labels"]["workflows.argoproj.io/completed"] == "true"
    assert wf["metadata"]["labels"]["workflows.argoproj.io/phase"] == "Succeeded"
    root, group = nodes["sweep"], nodes["sweep[0]"]
    assert (root["id"], root["type"], root["displayName"], root["templateName"]) == (
        "sweep",
        "Steps",
        "sweep",
        "main",
    )
    assert (group["type"], group["displayName"], group["boundaryID"]) == ("StepGroup", "[0]", "sweep")
    assert root["children"] == [group["id"]]
    first = nodes["sweep[0].trial(0:layers:2,lr:0.1)"]
    second = nodes["sweep[0].trial(1:layers:3,lr:0.01)"]
    assert group["children"] == [first["id"], second["id"]]
    assert first["id"] == f"sweep-{fnv32a(first['name'])}"
    assert (first["displayName"], first["type"], first["templateName"]) == (
        "trial(0:layers:2,lr:0.1)",
        "Pod",
        "train",
    )
    assert first["inputs"]["parameters"] == [{"name": "lr", "value": "0.1"}, {"name": "layers", "value": "2"}]
    assert parameters(first) == {"loss": "1.0"}
    assert parameters(second) == {"loss": "0.1"}
    assert first["phase"] == "Succeeded"
    assert first["startedAt"] < first["finishedAt"]
    assert first["hostNodeName"] == "kubesim-node"

    pods = core.list_namespaced_pod("default", label_selector="workflows.argoproj.io/workflow=sweep").items
    assert sorted(p.metadata.name for p in pods) == sorted(
        f"sweep-train-{fnv32a(n['name'])}" for n in (first, second)
    )
    assert all(p.metadata.labels["workflows.argoproj.io/completed"] == "true" for p in pods)
    assert all(p.metadata.owner_references[0].kind == "Workflow" for p in pods)
    assert {p.metadata.annotations["workflows.argoproj.io/node-name"] for p in pods} == {
        first["name"],
        second["name"],
    }


def test_pods_run_with_substituted_parameters_and_workflow_name(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    say = container("say", "message")
    say["container"]["args"] = ["{{inputs.parameters.message}} from {{workflow.name}}"]
    step = {"name": "say", "template": "say", "arguments": args(message="{{workflow.parameters.greeting}}")}
    submit(
        custom,
        workflow("greet", "main", {"name": "main", "steps": [[step]]}, say, arguments=args(greeting="hello")),
    )
    sim.advance(0)
    (pod,) = core.list_namespaced_pod("default").items
    assert pod.spec.containers[0].name == "main"
    assert pod.spec.containers[0].args == ["hello from greet"]
    assert pod.spec.restart_policy == "Never"
    assert pod.metadata.labels["workflows.argoproj.io/completed"] == "false"
    assert finish(sim, custom, "greet")["status"]["phase"] == "Succeeded"


def test_outputs_flow_between_steps_via_results_parameters_and_with_param(
    sim: Simulator, custom: client.CustomObjectsApi
) -> None:
    sim.argo.script("list", run={"duration": 1, "output": ['["a", "b", "c"]']})
    sim.argo.script("join", parameters=lambda node: {"echo": node.inputs["all"]})
    steps = [
        [{"name": "list", "template": "list"}],
        [
            {
                "name": "shout",
                "template": "shout",
                "arguments": args(word="{{item}}"),
                "withParam": "{{steps.list.outputs.result}}",
            }
        ],
        [
            {
                "name": "join",
                "template": "join",
                "arguments": args(all="{{steps.shout.outputs.parameters.loud}}"),
            }
        ],
    ]
    main = {
        "name": "main",
        "steps": steps,
        "outputs": {
            "parameters": [
                {"name": "joined", "valueFrom": {"parameter": "{{steps.join.outputs.parameters.echo}}"}}
            ]
        },
    }
    shout = container("shout", "word", outputs=["loud"])
    scripted = {"parameters": {"loud": "{{inputs.parameters.word}}!"}}
    shout["metadata"] = {"annotations": {"kubesim.argoml.io/outputs": json.dumps(scripted)}}
    listing = {"name": "list", "script": {"image": "python", "source": "print(['a', 'b', 'c'])"}}
    submit(
        custom, workflow("chain", "main", main, listing, shout, container("join", "all", outputs=["echo"]))
    )
    wf = finish(sim, custom, "chain")
    nodes = by_name(wf)
    assert nodes["chain[0].list"]["outputs"]["result"] == '["a", "b", "c"]'
    assert [
        n["displayName"]
        for n in sorted(nodes.values(), key=lambda n: n["name"])
        if n["name"].startswith("chain[1].")
    ] == [
        "shout(0:a)",
        "shout(1:b)",
        "shout(2:c)",
    ]
    assert json.loads(nodes["chain[2].join"]["inputs"]["parameters"][0]["value"]) == ["a!", "b!", "c!"]
    assert json.loads(parameters(nodes["chain"])["joined"]) == ["a!", "b!", "c!"]


def test_a_dag_runs_tasks_by_dependencies_and_depends(
    sim: Simulator, custom: client.CustomObjectsApi
) -> None:
    sim.argo.script("work", run=lambda node: {"exitCode": 1 if node.inputs["name"] == "flaky" else 0})
    sim.argo.script("work", parameters=lambda node: {"out": node.inputs["name"] + "!"})
    tasks = [
        {"name": "prepare", "template": "work", "arguments": args(name="prepare")},
        {"name": "flaky", "template": "work", "arguments": args(name="flaky"), "dependencies": ["prepare"]},
        {
            "name": "train",
            "template": "work",
            "arguments": args(name="{{tasks.prepare.outputs.parameters.out}}"),
            "dependencies": ["prepare"],
        },
        {
            "name": "recover",
            "template": "work",
            "arguments": args(name="recover"),
            "depends": "flaky.Failed && train",
        },
        {
            "name": "celebrate",
            "template": "work",
            "arguments": args(name="celebrate"),
            "depends": "flaky.Succeeded",
        },
    ]
    dag = {"name": "main", "dag": {"tasks": tasks, "failFast": False}}
    submit(custom, workflow("graph", "main", dag, container("work", "name", outputs=["out"])))
    wf = finish(sim, custom, "graph")
    nodes = by_name(wf)
    assert {name: node["phase"] for name, node in nodes.items() if name != "graph"} == {
        "graph.prepare": "Succeeded",
        "graph.flaky": "Failed",
        "graph.train": "Succeeded",
        "graph.recover": "Succeeded",
        "graph.celebrate": "Omitted",
    }
    assert wf["status"]["phase"] == "Succeeded"  # the failure is handled by recover's depends
    assert nodes["graph.train"]["inputs"]["parameters"] == [{"name": "name", "value": "prepare!"}]
    assert nodes["graph.flaky"]["message"] == "Error (exit code 1)"
    assert nodes["graph"]["children"] == [nodes["graph.prepare"]["id"]]
    assert sorted(nodes["graph.prepare"]["children"]) == sorted(
        [nodes["graph.flaky"]["id"], nodes["graph.train"]["id"]]
    )
    assert nodes["graph.prepare"]["displayName"] == "prepare"


def test_an_unhandled_failure_fails_the_workflow_with_argos_message(
    sim: Simulator, custom: client.CustomObjectsApi
) -> None:
    sim.argo.script("boom", run={"exitCode": 3})
    steps = [[{"name": "boom", "template": "boom"}], [{"name": "never", "template": "boom"}]]
    submit(custom, workflow("broken", "main", {"name": "main", "steps": steps}, container("boom")))
    wf = finish(sim, custom, "broken")
    nodes = by_name(wf)
    assert wf["status"]["phase"] == "Failed"
    assert wf["status"]["message"] == f"child '{nodes['broken[0].boom']['id']}' failed"
    assert nodes["broken[0].boom"]["outputs"]["exitCode"] == "3"
    assert "broken[1]" not in nodes
    assert wf["metadata"]["labels"]["workflows.argoproj.io/phase"] == "Failed"


def test_continue_on_failed_lets_the_next_group_run(sim: Simulator, custom: client.CustomObjectsApi) -> None:
    sim.argo.script("step", display_name="bad", run={"exitCode": 1})
    steps = [
        [{"name": "bad", "template": "step", "continueOn": {"failed": True}}],
        [{"name": "good", "template": "step"}],
    ]
    submit(custom, workflow("tolerant", "main", {"name": "main", "steps": steps}, container("step")))
    wf = finish(sim, custom, "tolerant")
    assert wf["status"]["phase"] == "Succeeded"
    assert by_name(wf)["tolerant[0].bad"]["phase"] == "Failed"


def test_workflow_parallelism_caps_running_pods(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    sim.argo.script("work", run={"duration": 10})
    fan_out = {"name": "item", "template": "work", "withSequence": {"count": "5"}}
    submit(
        custom,
        workflow("capped", "main", {"name": "main", "steps": [[fan_out]]}, container("work"), parallelism=2),
    )
    most = 0

    def tally() -> bool:
        nonlocal most
        pods = core.list_namespaced_pod("default").items
        most = max(most, sum(1 for p in pods if p.status.phase in ("Pending", "Running")))
        return read(custom, "capped").get("status", {}).get("phase") == "Succeeded"

    assert sim.run_until(tally, within=600)
    assert most == 2
    names = sorted(n["displayName"] for n in by_name(read(custom, "capped")).values() if n["type"] == "Pod")
    assert names == [f"item({i}:{i})" for i in range(5)]


def test_template_parallelism_caps_a_fan_out(sim: Simulator, custom: client.CustomObjectsApi) -> None:
    sim.argo.script("work", run={"duration": 10})
    fan_out = {"name": "item", "template": "work", "withItems": ["a", "b", "c"]}
    submit(
        custom,
        workflow(
            "paced", "main", {"name": "main", "parallelism": 1, "steps": [[fan_out]]}, container("work")
        ),
    )
    sim.advance(12)
    phases = sorted(n["phase"] for n in by_name(read(custom, "paced")).values() if n["type"] == "Pod")
    assert phases == ["Running", "Succeeded"]  # the second item started when the first ended
    wf = finish(sim, custom, "paced")
    starts = sorted(n["startedAt"] for n in by_name(wf).values() if n["type"] == "Pod")
    assert len(set(starts)) == 3


def test_retry_strategy_makes_attempt_nodes_until_one_succeeds(
    sim: Simulator, custom: client.CustomObjectsApi
) -> None:
    sim.argo.script(
        "flaky", run=[{"exitCode": 1}, {"exitCode": 1}, {"exitCode": 0}], parameters={"ok": "yes"}
    )
    flaky = container("flaky", outputs=["ok"], retryStrategy={"limit": "3", "backoff": {"duration": "5s"}})
    submit(
        custom,
        workflow(
            "persist", "main", {"name": "main", "steps": [[{"name": "try", "template": "flaky"}]]}, flaky
        ),
    )
    wf = finish(sim, custom, "persist")
    nodes = by_name(wf)
    retry = nodes["persist[0].try"]
    assert (retry["type"], retry["phase"]) == ("Retry", "Succeeded")
    attempts = [nodes[f"persist[0].try({i})"] for i in range(3)]
    assert retry["children"] == [a["id"] for a in attempts]
    assert [a["phase"] for a in attempts] == ["Failed", "Failed", "Succeeded"]
    assert attempts[1]["displayName"] == "try(1)"
    assert parameters(retry) == {"ok": "yes"}


def test_retries_stop_at_the_limit(sim: Simulator, custom: client.CustomObjectsApi) -> None:
    sim.argo.script("doomed", run={"exitCode": 2})
    doomed = container("doomed", retryStrategy={"limit": 1})
    submit(
        custom,
        workflow(
            "give-up", "main", {"name": "main", "steps": [[{"name": "try", "template": "doomed"}]]}, doomed
        ),
    )
    wf = finish(sim, custom, "give-up")
    retry = by_name(wf)["give-up[0].try"]
    assert (retry["phase"], retry["message"], len(retry["children"])) == ("Failed", "No more retries left", 2)


def test_the_exit_handler_runs_after_the_workflow_and_sees_its_status(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    sim.argo.script("fail", run={"exitCode": 1})
    notify = container("notify")
    notify["container"]["args"] = ["{{workflow.status}}"]
    submit(custom, workflow("handled", "fail", container("fail"), notify, onExit="notify"))
    wf = finish(sim, custom, "handled")
    exit_node = by_name(wf)["handled.onExit"]
    assert (exit_node["phase"], exit_node["templateName"]) == ("Succeeded", "notify")
    assert wf["status"]["phase"] == "Failed"
    exit_pod = core.read_namespaced_pod(exit_node["podName"], "default") if exit_node.get("podName") else None
    assert exit_pod is not None
    assert exit_pod.spec.containers[0].args == ["Failed"]


def test_a_missing_output_parameter_errors_the_node_unless_it_has_a_default(
    sim: Simulator, custom: client.CustomObjectsApi
) -> None:
    silent = container("silent", outputs=["metric"])
    defaulted = container("defaulted")
    defaulted["outputs"] = {"parameters": [{"name": "metric", "valueFrom": {"path": "/m", "default": "0"}}]}
    steps = [[{"name": "silent", "template": "silent"}, {"name": "defaulted", "template": "defaulted"}]]
    submit(custom, workflow("quiet", "main", {"name": "main", "steps": steps}, silent, defaulted))
    wf = finish(sim, custom, "quiet")
    nodes = by_name(wf)
    assert nodes["quiet[0].silent"]["phase"] == "Error"
    assert "no value for output parameter 'metric'" in nodes["quiet[0].silent"]["message"]
    assert parameters(nodes["quiet[0].defaulted"]) == {"metric": "0"}
    assert wf["status"]["phase"] == "Failed"


def test_output_artifacts_get_a_default_location_or_a_scripted_one(
    sim: Simulator, custom: client.CustomObjectsApi
) -> None:
    sim.argo.script("save", artifacts={"model": {"s3": {"key": "models/best.tgz"}}})
    save = container("save")
    save["outputs"] = {
        "artifacts": [{"name": "model", "path": "/out/model"}, {"name": "logs", "path": "/out/logs"}]
    }
    submit(custom, workflow("artifacts", "save", save))
    wf = finish(sim, custom, "artifacts")
    artifacts = {a["name"]: a for a in wf["status"]["nodes"]["artifacts"]["outputs"]["artifacts"]}
    assert artifacts["model"] == {"name": "model", "path": "/out/model", "s3": {"key": "models/best.tgz"}}
    assert artifacts["logs"]["s3"]["key"] == "artifacts/artifacts/logs.tgz"


def test_when_conditions_skip_steps(sim: Simulator, custom: client.CustomObjectsApi) -> None:
    steps = [
        [{"name": "flip", "template": "flip"}],
        [
            {"name": "heads", "template": "flip", "when": "{{steps.flip.outputs.result}} == heads"},
            {"name": "tails", "template": "flip", "when": "{{steps.flip.outputs.result}} == tails"},
        ],
    ]
    sim.argo.script("flip", run={"output": ["heads"]})
    submit(
        custom,
        workflow(
            "coin",
            "main",
            {"name": "main", "steps": steps},
            {"name": "flip", "script": {"image": "python", "source": "x"}},
        ),
    )
    nodes = by_name(finish(sim, custom, "coin"))
    assert nodes["coin[1].heads"]["phase"] == "Succeeded"
    assert (nodes["coin[1].tails"]["phase"], nodes["coin[1].tails"]["type"]) == ("Skipped", "Skipped")
    assert nodes["coin[1].tails"]["message"] == "when 'heads == tails' evaluated false"


def test_dag_fan_out_makes_a_task_group(sim: Simulator, custom: client.CustomObjectsApi) -> None:
    tasks = [
        {"name": "each", "template": "work", "withItems": [1, 2]},
        {"name": "after", "template": "work", "depends": "each"},
    ]
    submit(custom, workflow("grouped", "main", {"name": "main", "dag": {"tasks": tasks}}, container("work")))
    nodes = by_name(finish(sim, custom, "grouped"))
    group = nodes["grouped.each"]
    assert (group["type"], group["phase"]) == ("TaskGroup", "Succeeded")
    assert [nodes[f"grouped.each({i}:{i + 1})"]["id"] for i in range(2)] == group["children"]
    assert nodes["grouped.each(0:1)"]["children"] == [nodes["grouped.after"]["id"]]


def test_an_invalid_workflow_ends_in_error(sim: Simulator, custom: client.CustomObjectsApi) -> None:
    submit(
        custom, workflow("typo", "main", {"name": "main", "steps": [[{"name": "x", "template": "missing"}]]})
    )
    wf = finish(sim, custom, "typo")
    assert wf["status"]["phase"] == "Error"
    assert (
        wf["status"]["message"] == "invalid spec: templates.main.steps[0].x template name 'missing' undefined"
    )


def test_terminating_a_workflow_stops_its_pods_and_fails_it(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    sim.argo.script("long", run={"duration": None})
    submit(
        custom,
        workflow(
            "stoppable",
            "main",
            {"name": "main", "steps": [[{"name": "long", "template": "long"}]]},
            container("long"),
        ),
    )
    sim.advance(5)
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "stoppable", {"spec": {"shutdown": "Terminate"}}
    )
    wf = finish(sim, custom, "stoppable")
    assert wf["status"]["phase"] == "Failed"
    node = by_name(wf)["stoppable[0].long"]
    assert node["message"] == "Stopped with strategy 'Terminate'"
    sim.advance(1)
    pod = core.read_namespaced_pod(node["podName"], "default")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 143


def test_pod_gc_and_workflow_deletion_remove_pods(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    submit(custom, workflow("tidy", "work", container("work"), podGC={"strategy": "OnPodSuccess"}))
    finish(sim, custom, "tidy")
    sim.advance(1)
    assert core.list_namespaced_pod("default").items == []
    submit(custom, workflow("owned", "work", container("work")))
    sim.advance(2)
    assert len(core.list_namespaced_pod("default").items) == 1
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "owned")
    sim.advance(1)
    assert core.list_namespaced_pod("default").items == []


def test_kubectl_get_workflows_prints_argos_columns(
    sim: Simulator, custom: client.CustomObjectsApi, tmp_path: Path
) -> None:
    submit(custom, workflow("listed", "work", container("work")))
    finish(sim, custom, "listed")
    result = subprocess.run(
        [str(KUBECTL), "get", "wf"],
        env={"KUBECONFIG": str(sim.kubeconfig_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    header, row = result.stdout.splitlines()
    assert header.split() == ["NAME", "STATUS", "AGE", "MESSAGE"]
    assert row.split()[:2] == ["listed", "Succeeded"]


def test_sidecars_are_stopped_once_main_exits(
    sim: Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    with_sidecar = container("serve", sidecars=[{"name": "proxy", "image": "envoy"}])
    with_sidecar["metadata"] = {
        "annotations": {"kubesim.argoml.io/script": json.dumps({"proxy": {"duration": None}})}
    }
    submit(custom, workflow("sidecar", "serve", with_sidecar))
    wf = finish(sim, custom, "sidecar")
    assert wf["status"]["phase"] == "Succeeded"
    sim.advance(1)
    pod = core.read_namespaced_pod(wf["status"]["nodes"]["sidecar"]["podName"], "default")
    states = {c.name: c.state.terminated.exit_code for c in pod.status.container_statuses}
    assert states == {"main": 0, "proxy": 143}
