"""Names, labels, env and defaults that Kubeflow Trainer and JobSet define (pkg/constants/constants.go),
kept in one place so our pods look like the ones Trainer's JobSet would have made."""

from __future__ import annotations

GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
TRAIN_JOB_KIND = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
RUNTIME_KINDS = (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)

# spec.managedBy values Trainer accepts; only the first (or no value) is ours to reconcile.
#: The Kubeflow Trainer release whose API we serve (CRD schemas, conditions, labels, env: PyPI
#: kubeflow-trainer-api 2.3.0). The public ConfigMap reports it as `kubeflow_trainer_version`: Kubeflow's SDK
#: reads that to learn which Trainer it talks to, and our own version would tell it nothing.
SERVED_TRAINER_VERSION = "2.3.0"
#: Trainer's public ConfigMap (manifests/overlays/manager: configMapGenerator), readable by every
#: authenticated user through a Role and RoleBinding of the same name; the SDK's `verify_backend` reads it.
PUBLIC_CONFIGMAP = "kubeflow-trainer-public"
PUBLIC_VERSION_KEY = "kubeflow_trainer_version"
#: Where Trainer is installed; the SDK reads KUBEFLOW_SYSTEM_NAMESPACE with the same default.
SYSTEM_NAMESPACE = "kubeflow-system"

MANAGED_BY_TRAINER = "trainer.kubeflow.org/trainjob-controller"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES = (MANAGED_BY_TRAINER, MANAGED_BY_MULTIKUEUE)

LABEL_FRAMEWORK = "trainer.kubeflow.org/framework"
LABEL_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
INITIALIZERS = (DATASET_INITIALIZER, MODEL_INITIALIZER)
NODE = "node"
LAUNCHER = "launcher"
# Containers whose env only the Trainer or Initializer APIs may set, never a runtime patch.
API_OWNED_CONTAINERS = (NODE, DATASET_INITIALIZER, MODEL_INITIALIZER)
INITIALIZER_ENV_STORAGE_URI = "STORAGE_URI"

CONTAINER_TRAINER_PORT = 29500

# Labels and annotations JobSet and the Job controller put on every pod they create.
LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
# JobSet's other keys, set as labels and as annotations alike (jobset api/jobset/v1alpha2/jobset_types.go,
# pkg/controllers labelAndAnnotateObject); tools and schedulers select on them.
LABEL_JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
LABEL_RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
LABEL_GLOBAL_REPLICAS = "jobset.sigs.k8s.io/global-replicas"
LABEL_JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
LABEL_JOB_KEY = "jobset.sigs.k8s.io/job-key"
LABEL_GROUP_NAME = "jobset.sigs.k8s.io/group-name"
LABEL_GROUP_REPLICAS = "jobset.sigs.k8s.io/group-replicas"
LABEL_JOB_GROUP_INDEX = "jobset.sigs.k8s.io/job-group-index"
# Kubernetes' default `backoffLimit` of a Job (batch/v1), and so of each Job JobSet makes.
DEFAULT_BACKOFF_LIMIT = 6
# JobSet's default `groupName` of a replicated job.
DEFAULT_GROUP_NAME = "default"
LABEL_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
ANNOTATION_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_FIELD_PATH = f"metadata.annotations['{ANNOTATION_COMPLETION_INDEX}']"

TORCH_NUM_NODES = "PET_NNODES"
TORCH_NUM_PROC_PER_NODE = "PET_NPROC_PER_NODE"
TORCH_NODE_RANK = "PET_NODE_RANK"
TORCH_MASTER_ADDR = "PET_MASTER_ADDR"
TORCH_MASTER_PORT = "PET_MASTER_PORT"
TORCH_RESERVED_ENV = frozenset(
    {TORCH_NUM_NODES, TORCH_NUM_PROC_PER_NODE, TORCH_NODE_RANK, TORCH_MASTER_ADDR, TORCH_MASTER_PORT}
)

XGBOOST_TRACKER_URI = "DMLC_TRACKER_URI"
XGBOOST_TRACKER_PORT = "DMLC_TRACKER_PORT"
XGBOOST_TASK_ID = "DMLC_TASK_ID"
XGBOOST_NUM_WORKER = "DMLC_NUM_WORKER"
XGBOOST_RESERVED_ENV = frozenset(
    {XGBOOST_TRACKER_URI, XGBOOST_TRACKER_PORT, XGBOOST_TASK_ID, XGBOOST_NUM_WORKER}
)

JAX_NUM_PROCESSES = "JAX_NUM_PROCESSES"
JAX_PROCESS_ID = "JAX_PROCESS_ID"
JAX_COORDINATOR_ADDRESS = "JAX_COORDINATOR_ADDRESS"

MPI_IMPLEMENTATION_OPENMPI = "OpenMPI"
MPI_IMPLEMENTATIONS = (MPI_IMPLEMENTATION_OPENMPI,)
MPI_DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
MPI_SSH_AUTH_SECRET_SUFFIX = "-mpi-ssh-auth"  # noqa: S105 -- a name, not a secret
MPI_SSH_AUTH_VOLUME = "mpi-ssh-auth"
MPI_SSH_PRIVATE_KEY = "ssh-privatekey"  # corev1.SSHAuthPrivateKey
MPI_SSH_PUBLIC_KEY = "ssh-publickey"
MPI_SSH_PRIVATE_KEY_FILE = "id_rsa"
MPI_SSH_PUBLIC_KEY_FILE = "id_rsa.pub"
MPI_SSH_AUTHORIZED_KEYS = "authorized_keys"
MPI_SSH_AUTH_DEFAULT_MODE = 0o400
MPI_SSH_PRIVATE_KEY_MODE = 0o640
MPI_SSH_PUBLIC_KEY_MODE = 0o644
MPI_HOSTFILE_DIR = "/etc/mpi"
MPI_HOSTFILE_NAME = "hostfile"
MPI_HOSTFILE_CONFIGMAP_SUFFIX = "-mpi-hostfile"
MPI_HOSTFILE_VOLUME = "mpi-hostfile"
OPENMPI_HOSTFILE = "OMPI_MCA_orte_default_hostfile"
OPENMPI_RSH_ARGS = "OMPI_MCA_plm_rsh_args"
OPENMPI_RSH_ARGS_VALUE = "-o ConnectionAttempts=10"
OPENMPI_KEEP_FQDN_HOSTNAMES = "OMPI_MCA_orte_keep_fqdn_hostnames"
OPENMPI_DEFAULT_SLOTS = "OMPI_MCA_orte_set_default_slots"
MPI_RESERVED_ENV = frozenset(
    {OPENMPI_HOSTFILE, OPENMPI_RSH_ARGS, OPENMPI_KEEP_FQDN_HOSTNAMES, OPENMPI_DEFAULT_SLOTS}
)

# Gang scheduling: how a pod names its PodGroup (Trainer's coscheduling and volcano plugins).
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
