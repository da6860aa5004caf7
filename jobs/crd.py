"""TFJob, MXJob, PyTorchJob, XGBoostJob, JAXJob, PaddleJob and MPIJob: the Kubeflow Training Operator v1
spec shape, so a Kubeflow manifest works by changing its apiVersion. Pod templates are kept as written; the
fields the operator reads are typed."""

from __future__ import annotations

from kube.crds.definition import AGE, CATEGORY, CustomResource, PrinterColumn, Scale
from kube.crds.schema import (
    QUANTITY,
    Schema,
    array,
    boolean,
    conditions,
    date_time,
    embedded,
    int_or_string,
    integer,
    map_of,
    obj,
    string,
)

from .frameworks import elastic, mpi, tensorflow
from .spec import CLEAN_POD_POLICIES, RESTART_POLICIES


def replica_specs(framework: str, replica_types: str) -> Schema:
    return map_of(
        obj(
            {
                "replicas": integer("How many pods of this type; 1 when left out.", minimum=0),
                "restartPolicy": string(
                    "What to do when a pod exits. ExitCode retries exit codes of 128 and above "
                    "(signals, OOM kills) and fails the job on 1-127.",
                    enum=RESTART_POLICIES,
                ),
                "template": embedded("The pod template (core/v1 PodTemplateSpec), kept as written."),
            },
        ),
        f"{framework} replicas by type ({replica_types}; keys are matched case-insensitively).",
    )


RUN_POLICY = obj(
    {
        "cleanPodPolicy": string(
            "Which pods to delete once the job finishes: All, Running (still running) or None.",
            enum=CLEAN_POD_POLICIES,
        ),
        "ttlSecondsAfterFinished": integer("Delete the finished job after this many seconds.", minimum=0),
        "activeDeadlineSeconds": integer(
            "Fail the job and remove its pods when it runs longer than this.", minimum=0, bits=64
        ),
        "backoffLimit": integer("Restarts allowed (every restart counts) before the job fails.", minimum=0),
        "suspend": boolean("Remove the pods and keep the job until this is false again."),
        "schedulingPolicy": obj(
            {
                "minAvailable": integer(
                    "Pods the gang scheduler must be able to place at once; every replica when left out.",
                    minimum=1,
                ),
                "queue": string("Volcano: the queue of the job's PodGroup (`default` when left out)."),
                "minResources": map_of(
                    QUANTITY,
                    "Resources the gang needs; the requests of its first minAvailable pods when left out.",
                ),
                "priorityClass": string("Volcano: the PriorityClass of the job's PodGroup."),
                "scheduleTimeoutSeconds": integer(
                    "scheduler-plugins: how long the gang may wait to be placed.", minimum=0
                ),
            },
            "Gang scheduling (JOBS_GANG_SCHEDULER): the PodGroup the operator creates for the job.",
        ),
    },
    "Policies shared by every replica type.",
)

JOB_STATUS = obj(
    {
        "conditions": conditions(
            "Created, Running, Restarting, Suspended, Succeeded, Failed; the last one that became True "
            "is the job's state."
        ),
        "replicaStatuses": map_of(
            obj(
                {
                    "active": integer("Pods running."),
                    "succeeded": integer("Pods that exited 0."),
                    "failed": integer("Pods that failed."),
                    "selector": string(
                        "This type's pods as a label selector string (what the scale subresource shows)."
                    ),
                }
            ),
            "Pod counts by replica type.",
        ),
        "replicaSummary": string("The replicas at a glance, e.g. 'Worker 3/4 running · PS 2/2'."),
        "restarts": integer("Restarts so far, pod recreations included (what backoffLimit counts)."),
        "restartLedger": obj(
            {
                "deletedPodRestarts": integer("Restarts of pods deleted to be recreated.", minimum=0),
                "countedPods": map_of(string(), "Pod name → uid of the pods already counted."),
            },
            "The operator's bookkeeping behind `restarts`.",
        ),
        "startTime": date_time("When the operator first saw the job."),
        "completionTime": date_time("When the job succeeded or failed."),
        "lastReconcileTime": date_time("When the operator last reconciled the job."),
        "observedGeneration": integer("The generation of the spec this status describes.", bits=64),
    },
    "Written by the operator only.",
    preserve_unknown=True,
)

#: `kubectl get training` lists the training jobs of both groups, ours and Kubeflow's: with both installed,
#: a bare `tfjobs` is ours (our short name `tfjob`, and `argoml.io` sorts first in discovery).
TRAINING_CATEGORY = "training"

JOB_COLUMNS = (
    PrinterColumn("State", "string", ".status.conditions[-1:].type", "The job's latest condition."),
    PrinterColumn("Replicas", "string", ".status.replicaSummary", "Replicas by type and state."),
    AGE,
)


def _job(
    kind: str,
    framework: str,
    spec_key: str,
    types: str,
    extra: dict[str, Schema],
    scale: Scale | None = None,
    description: str = "",
) -> CustomResource:
    return CustomResource(
        kind=kind,
        plural=f"{kind.lower()}s",
        short_names=(kind.lower(),),
        categories=(CATEGORY, TRAINING_CATEGORY),
        description=description
        or f"A distributed {framework} training job: one pod and one headless service per replica.",
        spec=obj(
            {spec_key: replica_specs(framework, types), "runPolicy": RUN_POLICY, **extra},
            required=(spec_key,),
        ),
        status=JOB_STATUS,
        columns=JOB_COLUMNS,
        scale=scale,
    )


TFJOB = _job(
    "TFJob",
    "TensorFlow",
    "tfReplicaSpecs",
    "Chief, Master, PS, Worker, Evaluator",
    {
        "successPolicy": string(
            'When the job succeeds: "" (the chief, else worker 0) or AllWorkers.',
            enum=("", tensorflow.SUCCESS_POLICY_ALL_WORKERS),
        )
    },
)
MXJOB = _job(
    "MXJob",
    "MXNet",
    "mxReplicaSpecs",
    "Scheduler, Server, Worker",
    {
        "jobMode": string(
            "MXTrain (distributed training) or MXTune (auto-tuning).", enum=("MXTrain", "MXTune")
        )
    },
)
ELASTIC_POLICY = obj(
    {
        "minReplicas": integer("The fewest Workers torchrun runs with (PET_NNODES min).", minimum=1),
        "maxReplicas": integer("The most Workers torchrun admits (PET_NNODES max).", minimum=1),
        "rdzvBackend": string("The rendezvous backend; c10d when left out.", enum=elastic.BACKENDS),
        "rdzvPort": integer(
            "The rendezvous port; the Worker's pytorchjob-port when left out.", minimum=1, maximum=65535
        ),
        "rdzvHost": string("The rendezvous host; the first Worker's service when left out."),
        "rdzvId": string("The rendezvous id (PET_RDZV_ID)."),
        "rdzvConf": array(
            obj({"key": string(), "value": string()}),
            "More rendezvous settings, passed as key=value pairs joined by commas (PET_RDZV_CONF).",
        ),
        "standalone": boolean("Start a local standalone rendezvous (PET_STANDALONE)."),
        "nProcPerNode": integer("Deprecated: use spec.nprocPerNode.", minimum=1),
        "maxRestarts": integer("Worker group restarts torchrun allows before failing.", minimum=0),
        "metrics": array(
            embedded("An autoscaling/v2 MetricSpec."),
            "autoscaling/v2 metrics: with them the operator keeps a HorizontalPodAutoscaler (named as the "
            "job) that scales the Workers between minReplicas and maxReplicas.",
        ),
    },
    "torchrun's elastic training (Kubeflow v1 ElasticPolicy): Workers meet through a rendezvous.",
)


def worker_scale(spec_key: str) -> Scale:
    """Kubeflow's scale subresource: `kubectl scale pytorchjob` and a HorizontalPodAutoscaler set the
    Worker replicas, read the active Workers and find their pods by the selector the operator writes in
    the status."""
    return Scale(
        spec_replicas_path=f".spec.{spec_key}.Worker.replicas",
        status_replicas_path=".status.replicaStatuses.Worker.active",
        label_selector_path=".status.replicaStatuses.Worker.selector",
    )


PYTORCHJOB = _job(
    "PyTorchJob",
    "PyTorch",
    "pytorchReplicaSpecs",
    "Master, Worker",
    {
        "nprocPerNode": int_or_string("Processes per node for torchrun: a number, auto, cpu or gpu."),
        "elasticPolicy": ELASTIC_POLICY,
    },
    scale=worker_scale("pytorchReplicaSpecs"),
)
XGBOOSTJOB = _job("XGBoostJob", "XGBoost", "xgbReplicaSpecs", "Master, Worker", {})
JAXJOB = _job("JAXJob", "JAX", "jaxReplicaSpecs", "Worker", {}, scale=worker_scale("jaxReplicaSpecs"))
PADDLE_ELASTIC_POLICY = obj(
    {
        "minReplicas": integer(
            "The fewest Workers; maxReplicas (else the Worker replicas) when left out.", minimum=1
        ),
        "maxReplicas": integer(
            "The most Workers; minReplicas (else the Worker replicas) when left out.", minimum=1
        ),
        "maxRestarts": integer("Restarts paddle.distributed.launch allows.", minimum=0),
        "metrics": array(
            embedded("An autoscaling/v2 MetricSpec."), "autoscaling/v2 metrics (kept, not acted on)."
        ),
    },
    "Kubeflow v1 PaddleElasticPolicy: defaulted and checked, and (as in Kubeflow v1.9) acted on by nothing "
    "else.",
)
PADDLEJOB = _job(
    "PaddleJob",
    "PaddlePaddle",
    "paddleReplicaSpecs",
    "Master, Worker",
    {"elasticPolicy": PADDLE_ELASTIC_POLICY},
    scale=worker_scale("paddleReplicaSpecs"),
)

MPIJOB = _job(
    "MPIJob",
    "MPI",
    "mpiReplicaSpecs",
    "Launcher, Worker",
    {
        "slotsPerWorker": integer(
            "Processes per worker: the slots of each hostfile line; 1 when left out.", minimum=1
        ),
        "mpiImplementation": string(
            "The MPI the images run, which decides the hostfile format and the launcher's variables; OpenMPI "
            "when left out.",
            enum=mpi.MPI_IMPLEMENTATIONS,
        ),
        "sshAuthMountPath": string(
            "Where the job's SSH key is mounted in every pod; /root/.ssh when left out.", pattern="^/"
        ),
        "launcherCreationPolicy": string(
            "AtStartup: the launcher starts once its workers exist; WaitForWorkersReady: once they are "
            "Ready.",
            enum=mpi.LAUNCHER_CREATION_POLICIES,
        ),
        "cleanPodPolicy": string(
            "Kubeflow v1's older place of runPolicy.cleanPodPolicy, read when runPolicy names none.",
            enum=CLEAN_POD_POLICIES,
        ),
        "mainContainer": string(
            "Kubeflow v1: the container its kubectl-exec launcher entered; accepted, and not needed here "
            "(the launcher reaches its workers over SSH)."
        ),
    },
    description="An MPI job (Horovod, DeepSpeed, mpirun): a launcher that starts its processes on the "
    "workers over SSH, with a hostfile ConfigMap, an SSH key Secret and a headless Service for the job.",
)

#: Kubeflow Training Operator v1's group: the same kinds served as Kubeflow serves them, so its manifests
#: and SDK work unchanged (installed only on request: `install_crds --kubeflow`, the chart's
#: `kubeflow.installCRDs`).
KUBEFLOW_GROUP = "kubeflow.org"
KUBEFLOW_VERSION = "v1"
KUBEFLOW_CATEGORY = "kubeflow"
#: Kubeflow's group answers to its own short names, `kf` and the kind (`kftfjob`), which `kubectl
#: api-resources` shows beside ours (see TRAINING_CATEGORY).
KUBEFLOW_SHORT_NAME_PREFIX = "kf"
KUBEFLOW_JOBS = tuple(
    job.served_as(
        KUBEFLOW_GROUP,
        KUBEFLOW_VERSION,
        short_names=(f"{KUBEFLOW_SHORT_NAME_PREFIX}{job.singular}",),
        categories=(KUBEFLOW_CATEGORY, TRAINING_CATEGORY),
    )
    for job in (TFJOB, MXJOB, PYTORCHJOB, XGBOOSTJOB, JAXJOB, PADDLEJOB, MPIJOB)
)
