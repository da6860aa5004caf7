"""trainer.operator.torchtune: a `tune run` TrainJob gets the command Trainer builds, and what Trainer refuses
in one is refused by field. Tables ported from Kubeflow Trainer v2.3's
pkg/runtime/framework/plugins/torch/torchtune_test.go (TestGetModelFromRuntimeRef, TestIsLoraConfigEnabled,
TestIsUseQLoraFinetune, TestGetRecipeAndConfig) and torch_test.go's torchtune cases (issue 32: the SDK's
`BuiltinTrainer(TorchTuneConfig)` ran `tune run batch_size=2 epochs=1` with no recipe or config)."""

from __future__ import annotations

from typing import Any

import pytest

from fields import SpecError
from trainer.operator import plan, resolution, spec, torchtune
from trainer.tests import factories as f

MODEL = "llama3_2/1B"
LORA = ["model.lora_attn_modules=['q_proj']"]
QLORA = ["model.quantize_base=True"]
RUNTIME_COMMAND = [
    "tune",
    "run",
    "--rdzv_endpoint=localhost:29500",
    "full_finetune_distributed",
    "--config",
    "llama3_2/1B_full",
    "dataset=torchtune.datasets.instruct_dataset",
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("torchtune-llama3.2-1b", "llama3_2/1B"),
        ("torchtune-qwen2.5-1.5b", "qwen2_5/1.5B"),
        ("torchtune-llama3.2", ""),
        ("torchtune-llama3.2-1b-extra", ""),
        ("", ""),
    ],
)
def test_the_model_comes_from_the_runtimes_name(name, model):
    assert torchtune.model_of(name) == model


@pytest.mark.parametrize(
    ("args", "lora", "qlora"),
    [
        (["batch_size=32", "model.lora_attn_modules=['q_proj','v_proj']"], True, False),
        (["batch_size=32", "epochs=10"], False, False),
        ([], False, False),
        (["model.quantize_base=True"], False, True),
        (["model.quantize_base=False"], False, False),
        (["model.quantize_base=True", "model.use_dora=True"], False, False),
        (["model.quantize_base=True", "model.use_dora=False"], False, True),
    ],
)
def test_lora_and_qlora_are_read_from_the_args(args, lora, qlora):
    assert (torchtune.lora_enabled(args), torchtune.qlora_enabled(args)) == (lora, qlora)


@pytest.mark.parametrize(
    ("nodes", "num_proc", "gpus", "args", "recipe", "suffix"),
    [
        (1, None, 1, [], "full_finetune_single_device", "_full_single_device"),
        (1, None, 1, LORA, "lora_finetune_single_device", "_lora_single_device"),
        (1, None, 1, QLORA, "lora_finetune_single_device", "_qlora_single_device"),
        (1, None, 4, [], "full_finetune_distributed", "_full"),
        (1, None, 4, LORA, "lora_finetune_distributed", "_lora"),
        (1, None, 4, QLORA, "lora_finetune_distributed", "_qlora"),
        (2, None, 8, [], "full_finetune_distributed", "_full_multinode"),
        (1, 1, 4, [], "full_finetune_single_device", "_full_single_device"),
        (1, 4, 4, [], "full_finetune_distributed", "_full"),
    ],
)
def test_the_recipe_and_config_follow_nodes_devices_and_args(nodes, num_proc, gpus, args, recipe, suffix):
    found = torchtune.recipe_and_config(nodes, num_proc, gpus, "torchtune-llama3.2-1b", args)
    assert found == (recipe, MODEL + suffix)


def runtime(name: str = "torchtune-llama3.2-1b") -> dict[str, Any]:
    body = f.torchtune_runtime(name=name)
    node = body["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]["spec"]
    node["containers"][0]["command"] = list(RUNTIME_COMMAND)
    return body


def tune_job(
    runtime_name: str = "torchtune-llama3.2-1b", args: list[str] | None = None, **trainer: Any
) -> dict:
    return f.train_job(
        name="tune",
        runtime_name=runtime_name,
        trainer={"command": ["tune", "run"], "args": args or ["batch_size=2", "epochs=1"], **trainer},
    )


def node_container(job_body: dict, runtime_body: dict) -> dict[str, Any]:
    resolved = resolution.resolve(spec.parse_train_job(job_body), spec.parse_runtime(runtime_body))
    pod = next(pod for pod in plan.plan(resolved).pods if "-node-" in pod["metadata"]["name"])
    return next(ctr for ctr in pod["spec"]["containers"] if ctr["name"] == "node")


def test_the_sdks_tune_run_gets_the_recipe_config_and_the_runtimes_overrides_on_one_gpu():
    node = node_container(tune_job(resourcesPerNode={"limits": {"nvidia.com/gpu": 1}}), runtime())
    assert node["command"] == [
        "tune",
        "run",
        "full_finetune_single_device",
        "--config",
        "llama3_2/1B_full_single_device",
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    assert node["args"] == ["batch_size=2", "epochs=1"]
    env = {e["name"] for e in node["env"]}
    assert {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK"} <= env
    assert not env & {"PET_MASTER_ADDR", "PET_MASTER_PORT"}, (
        "torchtune meets its peers through --rdzv_endpoint"
    )


def test_several_processes_rendezvous_at_the_first_node():
    node = node_container(tune_job(resourcesPerNode={"limits": {"nvidia.com/gpu": 4}}), runtime())
    assert node["command"][:6] == [
        "tune",
        "run",
        "--rdzv_endpoint=tune-node-0-0.tune:29500",
        "full_finetune_distributed",
        "--config",
        "llama3_2/1B_full",
    ]


def test_on_cpus_one_process_per_cpu_decides_as_trainers_torch_plugin_does():
    single = node_container(tune_job(resourcesPerNode={"requests": {"cpu": "1"}}), runtime())
    assert single["command"][2:5] == [
        "full_finetune_single_device",
        "--config",
        "llama3_2/1B_full_single_device",
    ]
    several = node_container(tune_job(resourcesPerNode={"requests": {"cpu": "4"}}), runtime())
    assert several["command"][2] == "--rdzv_endpoint=tune-node-0-0.tune:29500"


def test_a_trainer_that_is_not_tune_run_keeps_its_command_and_gets_the_masters_address():
    node = node_container(tune_job(command=["torchrun", "train.py"]), runtime())
    assert node["command"] == ["torchrun", "train.py"]
    assert "PET_MASTER_ADDR" in {e["name"] for e in node["env"]}


@pytest.mark.parametrize(
    ("runtime_name", "trainer", "problems"),
    [
        (
            "torchtune-llama3.1-70b",
            {},
            {
                "spec.runtimeRef.name": "must have a supported pretrained model, invalid model configured: "
                "llama3_1/70B"
            },
        ),
        (
            "torchtune-llama3.2-1b",
            {"numNodes": 2},
            {"spec.trainer.numNodes": "must be 1 for llama3_2/1B model"},
        ),
        (
            "torchtune-qwen2.5-1.5b",
            {"args": QLORA, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}},
            {"spec.runtimeRef.name": "QLoRA is not supported for qwen2_5/1.5B model"},
        ),
        (
            "torchtune-llama3.2-3b",
            {"args": QLORA, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}},
            {
                "spec.trainer.numProcPerNode": "must be auto or 1 for llama3_2/3B model when using QLoRA",
                "spec.trainer.resourcesPerNode": "must have gpu resource with value 1 for llama3_2/3B model "
                "when using QLoRA",
            },
        ),
        (
            "torchtune-llama3.2-1b",
            {"args": ["epochs=1", "output_dir=/tmp/mine"]},
            {
                "spec.trainer.args[1]": 'must not set immutable config "output_dir" in trainer args; '
                "it is managed by the runtime"
            },
        ),
    ],
)
def test_what_trainer_refuses_in_a_torchtune_job_is_refused_by_field(runtime_name, trainer, problems):
    job = tune_job(runtime_name, **trainer)
    with pytest.raises(SpecError) as error:
        resolution.resolve(spec.parse_train_job(job), spec.parse_runtime(runtime(runtime_name)))
    assert {problem.path: problem.message for problem in error.value.errors} == problems


def test_multi_node_lora_is_refused():
    problems = torchtune.problems(
        spec.parse_train_job(tune_job("torchtune-llama3.3-70b", args=LORA)), "torchtune-llama3.3-70b", 2, 8
    )
    assert problems == [
        ("spec.trainer.numNodes", "LoRA fine-tuning is not supported for multi-node training in TorchTune")
    ]
