"""Kubeflow Trainer v2's TrainingRuntime and ClusterTrainingRuntime (API 2.3) as CRDs: the framework policy,
gang scheduling and the JobSet template a TrainJob runs from, with upstream's schema. The JobSet spec's
fields we read are typed; its Job templates are kept as written. The TrainJob's own CRD, and the pieces both
share, are in `trainer.crd`."""

from __future__ import annotations

from kube.crds.definition import AGE, CLUSTER, NAMESPACED, CustomResource
from kube.crds.schema import (
    array,
    boolean,
    embedded,
    integer,
    list_map,
    obj,
    string,
    with_rules,
)
from trainer.crd import TRAINER_GROUP, TRAINER_VERSION, bounded, labels_and_annotations

_ML_POLICY = with_rules(
    obj(
        {
            "numNodes": integer("Training nodes unless the TrainJob says otherwise."),
            "torch": obj(
                {
                    "envInjection": obj(
                        {
                            "targets": bounded(
                                list_map(
                                    obj(
                                        {
                                            "jobName": string(
                                                "The replicated job.", min_length=1, max_length=253
                                            ),
                                            "containerNames": with_rules(
                                                {
                                                    **array(
                                                        string(max_length=63), "Its containers.", min_items=1
                                                    ),
                                                    "maxItems": 8,
                                                    "x-kubernetes-list-type": "set",
                                                },
                                                (
                                                    "!self.exists(c, c == 'node')",
                                                    "containerNames must not include the main node container "
                                                    "because PET_* envs are always injected into it",
                                                ),
                                            ),
                                        },
                                        required=("jobName", "containerNames"),
                                    ),
                                    keys=("jobName",),
                                    description="Other containers that get the PET_* env too.",
                                ),
                                max_items=16,
                            )
                        }
                    )
                },
                "PyTorch (torchrun) distributed training.",
            ),
            "mpi": obj(
                {
                    "numProcPerNode": {**integer("Slots per node."), "default": 1},
                    "mpiImplementation": {
                        **string("The MPI implementation.", enum=("OpenMPI", "")),
                        "default": "OpenMPI",
                    },
                    "sshAuthMountPath": {
                        **string("Where the SSH key is mounted.", max_length=4096),
                        "default": "/root/.ssh",
                    },
                    "runLauncherAsNode": {**boolean("The launcher trains too."), "default": False},
                },
                "MPI (OpenMPI) over SSH.",
            ),
            "flux": obj(
                {
                    "numProcPerNode": with_rules(
                        {**integer("Processes per node."), "default": 1},
                        ("self >= 1", "NumProcPerNode in fluxPolicy must be >= 1"),
                    )
                },
                "Flux framework (not run by us yet).",
            ),
            "jax": obj({}, "JAX distributed."),
            "xgboost": obj({}, "XGBoost with Rabit (DMLC)."),
        },
        "The ML framework and its settings.",
    ),
    (
        "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
        ".filter(x, x).size() <= 1",
        "Only one of the policy can be configured",
    ),
)

_POD_GROUP_POLICY = obj(
    {
        "coscheduling": obj(
            {"scheduleTimeoutSeconds": {**integer("How long the gang may wait."), "default": 60}},
            "The scheduler-plugins coscheduling PodGroup.",
        ),
        "volcano": obj(
            {"networkTopology": embedded("Volcano's NetworkTopologySpec.")}, "Volcano's PodGroup."
        ),
    },
    "Gang scheduling.",
)

_REPLICATED_JOB = obj(
    {
        "name": string("The replicated job's name (e.g. node, launcher, dataset-initializer)."),
        "groupName": {**string("JobSet's group of replicated jobs."), "default": "default"},
        "replicas": {**integer("How many Jobs of this template."), "default": 1},
        "dependsOn": with_rules(
            {
                **list_map(
                    obj(
                        {
                            "name": string("The replicated job this one waits for."),
                            "status": string("Until it is Ready or Complete.", enum=("Ready", "Complete")),
                        },
                        required=("name", "status"),
                    ),
                    keys=("name",),
                    description="What must be Ready or Complete before this job starts.",
                ),
                "maxItems": 5,
            },
            ("self == oldSelf", "Value is immutable"),
        ),
        "template": embedded("The batch/v1 JobTemplateSpec, kept as written."),
    },
    preserve_unknown=True,
    required=("name", "template"),
)

RUNTIME_SPEC = {
    **obj(
        {
            "mlPolicy": _ML_POLICY,
            "podGroupPolicy": _POD_GROUP_POLICY,
            "template": {
                **obj(
                    {
                        "metadata": labels_and_annotations("The JobSet's labels and annotations."),
                        "spec": obj(
                            {
                                "replicatedJobs": list_map(
                                    _REPLICATED_JOB, keys=("name",), description="The steps, in order."
                                ),
                                "network": obj(
                                    {
                                        "enableDNSHostnames": boolean("Pods get hostnames (always true)."),
                                        "subdomain": string("The headless Service's name."),
                                        "publishNotReadyAddresses": boolean("DNS for pods not yet Ready."),
                                    },
                                    "Pod DNS.",
                                ),
                            },
                            "A JobSet spec (jobset.x-k8s.io/v1alpha2); what we do not read stays as written.",
                            preserve_unknown=True,
                        ),
                    },
                    "The JobSet template the TrainJob's pods come from.",
                ),
                "minProperties": 1,
            },
        },
        "The runtime's framework, gang scheduling and pod templates.",
    ),
    "minProperties": 1,
}


def _runtime(kind: str, description: str, *, scope: str = NAMESPACED) -> CustomResource:
    return CustomResource(
        kind=kind,
        plural=f"{kind.lower()}s",
        short_names=(),
        categories=(),
        description=description,
        spec=RUNTIME_SPEC,
        status=None,
        columns=(AGE,),
        group=TRAINER_GROUP,
        version=TRAINER_VERSION,
        scope=scope,
        spec_required=False,
    )


TRAINING_RUNTIME = _runtime(
    "TrainingRuntime",
    "TrainingRuntime represents a training runtime which can be referenced as part of "
    "runtimeRef API in TrainJob. This resource is a namespaced-scoped and can be referenced by TrainJob that "
    "created in the *same* namespace as the TrainingRuntime.",
)
CLUSTER_TRAINING_RUNTIME = _runtime(
    "ClusterTrainingRuntime",
    "ClusterTrainingRuntime represents a training runtime which can be referenced as part of runtimeRef API "
    "in TrainJob. This resource is a cluster-scoped and can be referenced by TrainJob that created in *any* "
    "namespace.",
    scope=CLUSTER,
)
