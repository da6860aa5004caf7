"""Trainer's torchtune plugin without Trainer (pkg/runtime/framework/plugins/torch/torchtune.go, v2.3):
what a TrainJob whose trainer command is `tune run` (the SDK's `BuiltinTrainer(TorchTuneConfig)`) runs, and
what Trainer refuses in one.

The SDK sends only `command: [tune, run]` and the user's overrides as `args` (`batch_size=2 epochs=1`);
Trainer completes the command from the runtime's name and the TrainJob's shape: the rendezvous endpoint
when more than one process trains, the recipe and `--config <model>_<variant>` chosen by the node and
device counts and by whether the args ask for LoRA, QLoRA or DoRA, and the runtime's immutable overrides
(`output_dir=…`, `tokenizer.path=…`, `checkpointer.checkpoint_dir=…`, `tokenizer.merges_file=…`) copied
from the runtime's own `node` command. The TrainJob's `args` stay the container's args.

Pure: the parsed TrainJob and runtime and a few counts in, a command or problems out.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainer import constants as c
from trainer.operator import spec

ENTRYPOINT = ("tune", "run")
ARG_RDZV_ENDPOINT = "--rdzv_endpoint"
ARG_CONFIG = "--config"
# Recipes, and the suffixes of their configs after the model (`llama3_2/1B` + `_full`).
FULL_FINETUNE_SINGLE_DEVICE, FULL_SINGLE_DEVICE = "full_finetune_single_device", "_full_single_device"
FULL_FINETUNE_DISTRIBUTED, FULL_MULTI_DEVICES, FULL_MULTI_NODES = (
    "full_finetune_distributed",
    "_full",
    "_full_multinode",
)
LORA_FINETUNE_SINGLE_DEVICE, LORA_SINGLE_DEVICE, QLORA_SINGLE_DEVICE = (
    "lora_finetune_single_device",
    "_lora_single_device",
    "_qlora_single_device",
)
LORA_FINETUNE_DISTRIBUTED, LORA_DISTRIBUTED, QLORA_DISTRIBUTED = (
    "lora_finetune_distributed",
    "_lora",
    "_qlora",
)
# The config items in the user's args that switch recipes.
LORA_ATTN_MODULES, QUANTIZE_BASE, USE_DORA = (
    "model.lora_attn_modules",
    "model.quantize_base",
    "model.use_dora",
)
# What the runtime decides and a TrainJob's args may not override.
IMMUTABLE_CONFIGS = frozenset(
    {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}
)
LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B = (
    "llama3_2/1B",
    "llama3_2/3B",
    "llama3_3/70B",
    "qwen2_5/1.5B",
)
SUPPORTED_MODELS = frozenset({LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B})


def runs_torchtune(job: spec.TrainJob) -> bool:
    """Whether the TrainJob asks for torchtune: its trainer command is exactly `tune run`."""
    return job.trainer is not None and job.trainer.command == ENTRYPOINT


def model_of(runtime_name: str) -> str:
    """The model a torchtune runtime is named after: `torchtune-llama3.2-1b` → `llama3_2/1B`; "" when the
    name has not three dash-separated parts."""
    parts = runtime_name.split("-")
    if len(parts) != 3:
        return ""
    return f"{parts[1].replace('.', '_')}/{parts[2].upper()}"


def _bool_arg_enabled(args: Sequence[str], item: str) -> bool:
    """An arg `key=value` whose key contains `item` and whose value is Python's truthy `True`, any case."""
    for arg in args:
        name, found, value = arg.partition("=")
        if found and item in name and value.strip().lower() == "true":
            return True
    return False


def lora_enabled(args: Sequence[str]) -> bool:
    return any(LORA_ATTN_MODULES in arg for arg in args)


def qlora_enabled(args: Sequence[str]) -> bool:
    """QLoRA: the base model quantized, unless DoRA is on."""
    return not _bool_arg_enabled(args, USE_DORA) and _bool_arg_enabled(args, QUANTIZE_BASE)


def recipe_and_config(
    num_nodes: int, num_proc: int | None, gpus: int, runtime_name: str, args: Sequence[str]
) -> tuple[str, str]:
    """Trainer's getRecipeAndConfig. `num_proc` None is "auto" (one process per GPU)."""
    recipe, suffix = FULL_FINETUNE_DISTRIBUTED, FULL_MULTI_DEVICES
    if num_nodes == 1 and (num_proc == 1 or gpus == 1):
        if qlora_enabled(args):
            recipe, suffix = LORA_FINETUNE_SINGLE_DEVICE, QLORA_SINGLE_DEVICE
        elif lora_enabled(args):
            recipe, suffix = LORA_FINETUNE_SINGLE_DEVICE, LORA_SINGLE_DEVICE
        else:
            recipe, suffix = FULL_FINETUNE_SINGLE_DEVICE, FULL_SINGLE_DEVICE
    elif num_nodes == 1 and qlora_enabled(args):
        recipe, suffix = LORA_FINETUNE_DISTRIBUTED, QLORA_DISTRIBUTED
    elif num_nodes == 1 and lora_enabled(args):
        recipe, suffix = LORA_FINETUNE_DISTRIBUTED, LORA_DISTRIBUTED
    elif num_nodes > 1:
        suffix = FULL_MULTI_NODES
    return recipe, model_of(runtime_name) + suffix


def runtime_overrides(runtime: spec.Runtime) -> list[str]:
    """The immutable configs the runtime's trainer `node` container sets in its command, in its order."""
    trainer_job = runtime.trainer_job()
    containers = trainer_job.pod_template.get("spec", {}).get("containers", []) if trainer_job else []
    node = next((ctr for ctr in containers if isinstance(ctr, dict) and ctr.get("name") == c.NODE), {})
    return [
        str(part)
        for part in node.get("command") or []
        if isinstance(part, str) and part.split("=", 1)[0] in IMMUTABLE_CONFIGS
    ]


def command(
    job: spec.TrainJob, runtime: spec.Runtime, num_nodes: int, num_proc: int | None, gpus: int
) -> list[str]:
    """`tune run`, the rendezvous endpoint (only when several processes train: several nodes, several
    processes asked for, or several GPUs under "auto"), the recipe and its config, the runtime's overrides.
    `num_proc` is the torch plugin's numProcPerNode after its CPU rule (None: "auto")."""
    args = job.trainer.args if job.trainer is not None and job.trainer.args else ()
    parts = list(ENTRYPOINT)
    if num_nodes > 1 or (num_proc is not None and num_proc > 1) or (num_proc is None and gpus > 1):
        master = f"{job.name}-{c.NODE}-0-0.{job.name}:{c.CONTAINER_TRAINER_PORT}"
        parts.append(f"{ARG_RDZV_ENDPOINT}={master}")
    recipe, config = recipe_and_config(num_nodes, num_proc, gpus, runtime.name, args)
    return [*parts, recipe, ARG_CONFIG, config, *runtime_overrides(runtime)]


def problems(job: spec.TrainJob, runtime_name: str, num_nodes: int, gpus: int) -> list[tuple[str, str]]:
    """Trainer's validateTorchTune, field by field, in its words. Its recipe check reads numProcPerNode as
    the TrainJob gives it ("auto" when it does not), before the torch plugin's CPU rule."""
    trainer = job.trainer
    if trainer is None:
        return []
    args = trainer.args or ()
    found: list[tuple[str, str]] = []
    model = model_of(runtime_name)
    if model not in SUPPORTED_MODELS:
        found.append(
            (
                "spec.runtimeRef.name",
                f"must have a supported pretrained model, invalid model configured: {model}",
            )
        )
    if num_nodes > 1 and model != LLAMA3_3_70B:
        found.append(("spec.trainer.numNodes", f"must be 1 for {model} model"))
    _, config = recipe_and_config(num_nodes, trainer.num_proc_per_node, gpus, runtime_name, args)
    if QLORA_DISTRIBUTED in config:
        if model == QWEN2_5_1_5B:
            found.append(("spec.runtimeRef.name", f"QLoRA is not supported for {model} model"))
        if QLORA_SINGLE_DEVICE not in config and model in (LLAMA3_2_1B, LLAMA3_2_3B):
            found.append(
                ("spec.trainer.numProcPerNode", f"must be auto or 1 for {model} model when using QLoRA")
            )
            found.append(
                (
                    "spec.trainer.resourcesPerNode",
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                )
            )
    if num_nodes > 1 and (lora_enabled(args) or qlora_enabled(args)):
        found.append(
            (
                "spec.trainer.numNodes",
                "LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        )
    for index, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            found.append(
                (
                    f"spec.trainer.args[{index}]",
                    f'must not set immutable config "{key}" in trainer args; it is managed by the runtime',
                )
            )
    return found
