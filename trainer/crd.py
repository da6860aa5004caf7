"""Kubeflow Trainer v2's TrainJob (`trainer.kubeflow.org/v1alpha1`, API 2.3), with upstream's schema
(defaults, limits, CEL rules) so Trainer's manifests and SDK work unchanged. Core types upstream embeds
whole (pod and Job templates, volumes, affinity) are kept as written; the fields Trainer reads are typed.
Like upstream's CRDs: no short names, no categories. The runtimes' kinds are in `trainer.runtimes.crd`,
built with the helpers here."""

from __future__ import annotations

from kube.crds.definition import AGE, CustomResource, PrinterColumn
from kube.crds.schema import (
    IMMUTABLE,
    QUANTITY,
    Schema,
    array,
    boolean,
    date_time,
    embedded,
    integer,
    list_map,
    map_of,
    obj,
    string,
    with_rules,
)

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
DEFAULT_RUNTIME_KIND = "ClusterTrainingRuntime"
MANAGED_BY_VALUES = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")


def bounded(schema: Schema, *, max_items: int) -> Schema:
    """`schema` (an array) with at most `max_items` items."""
    return {**schema, "maxItems": max_items}


def _named(description: str = "") -> Schema:
    """A core object with a required `name` whose other fields are kept as written (a Volume, an EnvVar)."""
    return obj({"name": string(min_length=1)}, description, required=("name",), preserve_unknown=True)


def _env(description: str) -> Schema:
    return bounded(
        list_map(_named("A core/v1 EnvVar."), keys=("name",), description=description), max_items=128
    )


def labels_and_annotations(description: str) -> Schema:
    return obj(
        {
            "labels": map_of(string(), "Labels to add."),
            "annotations": map_of(string(), "Annotations to add."),
        },
        description,
    )


def _resources(description: str) -> Schema:
    """core/v1 ResourceRequirements: quantities typed, claims kept as written."""
    return obj(
        {
            "limits": map_of(QUANTITY, "The most of each resource a container may use."),
            "requests": map_of(QUANTITY, "The least of each resource a container needs."),
            "claims": array(_named("A ResourceClaim the container uses."), "DRA resource claims."),
        },
        description,
    )


def _storage_uri() -> Schema:
    return with_rules(
        string("Where to download from (scheme://…); the initializer's STORAGE_URI.", max_length=2048),
        (
            "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
            "storageUri may be empty, or it must be a valid URI (scheme://...)",
        ),
    )


def _initializer(what: str) -> Schema:
    return obj(
        {
            "storageUri": _storage_uri(),
            "env": _env(f"Env for the {what} initializer container."),
            "secretRef": obj(
                {"name": string("The Secret's name.")},
                f"A Secret in the TrainJob's namespace whose keys become the {what} initializer's env.",
            ),
        },
        f"The {what} initializer: downloads the {what} before the trainer starts.",
    )


RUNTIME_REF = with_rules(
    obj(
        {
            "name": string("The runtime's name.", min_length=1, max_length=253),
            "apiGroup": {**string("The runtime's API group.", max_length=253), "default": TRAINER_GROUP},
            "kind": {
                **string(
                    "TrainingRuntime (in the TrainJob's namespace) or ClusterTrainingRuntime.", max_length=253
                ),
                "default": DEFAULT_RUNTIME_KIND,
            },
        },
        "The runtime the TrainJob runs on.",
        required=("name",),
    ),
    IMMUTABLE,
)

TRAINER = with_rules(
    obj(
        {
            "image": string("The trainer container's image.", max_length=500),
            "command": {
                **bounded(
                    array(string(max_length=1048576), "The trainer container's command."), max_items=128
                ),
                "x-kubernetes-list-type": "atomic",
            },
            "args": {
                **bounded(
                    array(string(max_length=1048576), "The trainer container's arguments."), max_items=128
                ),
                "x-kubernetes-list-type": "atomic",
            },
            "env": _env("Env for the trainer container (what the framework sets itself is refused)."),
            "numNodes": integer("How many training nodes (pods)."),
            "resourcesPerNode": _resources("Compute resources of each training node."),
            "numProcPerNode": integer("Processes per node (torch: PET_NPROC_PER_NODE; MPI: slots)."),
        },
        "What the TrainJob sets on the runtime's trainer.",
    ),
    IMMUTABLE,
)


def _immutable_list_map(items: Schema, description: str, *, max_items: int) -> Schema:
    return with_rules(
        bounded(list_map(items, keys=("name",), description=description), max_items=max_items), IMMUTABLE
    )


CONTAINER_PATCH = obj(
    {
        "name": string("The container to patch.", min_length=1, max_length=253),
        "env": _env("Env to add to the container (not for node or the initializers: use the Trainer API)."),
        "volumeMounts": bounded(
            list_map(_named("A core/v1 VolumeMount."), keys=("name",), description="Volume mounts to add."),
            max_items=128,
        ),
        "securityContext": embedded("The container's core/v1 SecurityContext."),
    },
    required=("name",),
)

POD_SPEC_PATCH = obj(
    {
        "serviceAccountName": with_rules(string("The pods' ServiceAccount.", max_length=253), IMMUTABLE),
        "volumes": _immutable_list_map(_named("A core/v1 Volume."), "Volumes to add.", max_items=128),
        "initContainers": _immutable_list_map(CONTAINER_PATCH, "Init containers to patch.", max_items=64),
        "containers": _immutable_list_map(CONTAINER_PATCH, "Containers to patch.", max_items=64),
        "imagePullSecrets": _immutable_list_map(
            obj({"name": string("The Secret's name.")}), "Image pull secrets to add.", max_items=64
        ),
        "securityContext": with_rules(embedded("The pods' core/v1 PodSecurityContext."), IMMUTABLE),
        "nodeSelector": map_of(string(), "Node labels the pods must match."),
        "affinity": embedded("The pods' core/v1 Affinity."),
        "tolerations": {
            **bounded(array(embedded("A core/v1 Toleration."), "Tolerations to add."), max_items=128),
            "x-kubernetes-list-type": "atomic",
        },
        "schedulingGates": bounded(
            list_map(
                obj({"name": string()}, required=("name",)), keys=("name",), description="Scheduling gates."
            ),
            max_items=16,
        ),
        "terminationGracePeriodSeconds": with_rules(
            integer("The pods' grace period.", minimum=0, bits=64), IMMUTABLE
        ),
    },
    "The pod fields a runtime patch may set.",
)

REPLICATED_JOB_PATCH = obj(
    {
        "name": string("The runtime's replicated job to patch.", min_length=1, max_length=253),
        "template": obj(
            {
                "metadata": labels_and_annotations("The Job's labels and annotations."),
                "spec": obj(
                    {
                        "template": obj(
                            {
                                "metadata": labels_and_annotations("The pods' labels and annotations."),
                                "spec": POD_SPEC_PATCH,
                            },
                            "The pod template patch.",
                        )
                    }
                ),
            },
            "The Job template patch.",
        ),
    },
    required=("name",),
)

RUNTIME_PATCH = obj(
    {
        "manager": with_rules(
            string("Who owns this patch (e.g. kueue.x-k8s.io/manager).", min_length=1, max_length=253),
            IMMUTABLE,
        ),
        "time": date_time("When the patch was last changed."),
        "trainingRuntimeSpec": obj(
            {
                "template": obj(
                    {
                        "metadata": labels_and_annotations("The JobSet's labels and annotations."),
                        "spec": obj(
                            {
                                "replicatedJobs": bounded(
                                    list_map(
                                        REPLICATED_JOB_PATCH,
                                        keys=("name",),
                                        description="Per replicated job.",
                                    ),
                                    max_items=100,
                                )
                            }
                        ),
                    }
                )
            },
            "Patches to the runtime's JobSet template.",
        ),
    },
    required=("manager",),
)

TRAIN_JOB_SPEC = obj(
    {
        "runtimeRef": RUNTIME_REF,
        "initializer": with_rules(
            obj(
                {"dataset": _initializer("dataset"), "model": _initializer("model")},
                "Dataset and model initializers.",
            ),
            IMMUTABLE,
        ),
        "trainer": TRAINER,
        "runtimePatches": bounded(
            list_map(
                RUNTIME_PATCH, keys=("manager",), description="Patches to the runtime, by manager, in order."
            ),
            max_items=16,
        ),
        "suspend": {
            **boolean("Remove the pods and keep the TrainJob until this is false again."),
            "default": False,
        },
        "activeDeadlineSeconds": with_rules(
            integer("Fail the TrainJob when it runs longer than this.", minimum=1, bits=64), IMMUTABLE
        ),
        "managedBy": with_rules(
            {
                **string("The controller that runs the TrainJob.", max_length=253),
                "default": MANAGED_BY_VALUES[0],
            },
            (
                f"self in {list(MANAGED_BY_VALUES)}",
                "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue "
                "if set",
            ),
            IMMUTABLE,
        ),
    },
    "What to train, on which runtime.",
    required=("runtimeRef",),
)

_CONDITION = obj(
    {
        "type": string(
            "Suspended, Complete or Failed.",
            max_length=316,
            pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        ),
        "status": string("True, False or Unknown.", enum=("True", "False", "Unknown")),
        "observedGeneration": integer("The generation the condition was set for.", minimum=0, bits=64),
        "lastTransitionTime": date_time("When the status last changed."),
        "reason": string(
            "A CamelCase word saying why.",
            min_length=1,
            max_length=1024,
            pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        ),
        "message": string("A human-readable explanation.", max_length=32768),
    },
    "A metav1.Condition.",
    required=("type", "status", "lastTransitionTime", "reason", "message"),
)

_JOB_STATUS_COUNTS = ("ready", "succeeded", "failed", "active", "suspended")

TRAIN_JOB_STATUS = {
    **obj(
        {
            "conditions": bounded(
                list_map(_CONDITION, keys=("type",), description="Suspended, Complete, Failed."), max_items=8
            ),
            "jobsStatus": bounded(
                list_map(
                    obj(
                        {
                            "name": string("The replicated job.", min_length=1, max_length=253),
                            **{
                                count: integer(f"Jobs (pod groups) {count}.", minimum=0)
                                for count in _JOB_STATUS_COUNTS
                            },
                        },
                        required=("name", *_JOB_STATUS_COUNTS),
                    ),
                    keys=("name",),
                    description="Counts per replicated job.",
                ),
                max_items=100,
            ),
            "trainerStatus": with_rules(
                obj(
                    {
                        "progressPercentage": integer("How far training is, 0-100.", minimum=0, maximum=100),
                        "estimatedRemainingSeconds": integer("Seconds of training left.", minimum=0),
                        "metrics": {
                            **bounded(
                                array(
                                    obj(
                                        {
                                            "name": string(min_length=1, max_length=64),
                                            "value": string(min_length=1, max_length=64),
                                        },
                                        required=("name", "value"),
                                    ),
                                    "The latest training metrics the trainer reported.",
                                ),
                                max_items=256,
                            ),
                            "x-kubernetes-list-type": "atomic",
                        },
                        "lastUpdatedTime": date_time("When the trainer last reported."),
                    },
                    "Progress and metrics the trainer reports (KEP-2779).",
                ),
                ("has(self.lastUpdatedTime)", "lastUpdatedTime is required when trainerStatus is present"),
            ),
        },
        "Written by the controller (and the progress endpoint) only.",
    ),
    "minProperties": 1,
}

TRAIN_JOB = CustomResource(
    kind="TrainJob",
    plural="trainjobs",
    short_names=(),
    categories=(),
    description="TrainJob represents configuration of a training job.",
    spec=TRAIN_JOB_SPEC,
    status=TRAIN_JOB_STATUS,
    columns=(
        PrinterColumn(
            "State", "string", '.status.conditions[?(@.status=="True")].type', "The condition that is True."
        ),
        PrinterColumn("Progress", "integer", ".status.trainerStatus.progressPercentage", "Percent done."),
        PrinterColumn("Runtime", "string", ".spec.runtimeRef.name", "The runtime it runs on."),
        AGE,
    ),
    group=TRAINER_GROUP,
    version=TRAINER_VERSION,
    rules=(
        {
            "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
            "message": "metadata.name must match RFC 1035 DNS label format",
        },
        {
            "rule": "size(self.metadata.name) <= 63",
            "message": "metadata.name must be no more than 63 characters",
        },
    ),
)
