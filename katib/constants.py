"""Katib 0.19's own constants, copied from its Go API (`pkg/apis/controller/experiments/v1beta1/constants.go`,
`experiment_types.go`, `common/v1beta1/common_types.go`, `pkg/controller.v1beta1/consts/const.go`).

Why one module: defaults, validation and the plan each need some of them, and a value that differs from
Katib's by one character (a success condition's quote, a trailing slash on a path) changes what a Katib
user's manifest does; each value here can be checked against Katib's source line by line.
"""

from __future__ import annotations

import re

# --- Experiment spec (experiments/v1beta1/constants.go, experiment_types.go) --------------------------

DEFAULT_TRIAL_PARALLEL_COUNT = 3

RESUME_NEVER = "Never"
RESUME_LONG_RUNNING = "LongRunning"
RESUME_FROM_VOLUME = "FromVolume"
DEFAULT_RESUME_POLICY = RESUME_NEVER

DEFAULT_JOB_SUCCESS_CONDITION = 'status.conditions.#(type=="Complete")#|#(status=="True")#'
DEFAULT_JOB_FAILURE_CONDITION = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
DEFAULT_KUBEFLOW_JOB_SUCCESS_CONDITION = 'status.conditions.#(type=="Succeeded")#|#(status=="True")#'
DEFAULT_KUBEFLOW_JOB_FAILURE_CONDITION = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
DEFAULT_TRAINJOB_SUCCESS_CONDITION = 'status.conditions.#(type=="Complete")#|#(status=="True")#'
DEFAULT_TRAINJOB_FAILURE_CONDITION = 'status.conditions.#(type=="Failed")#|#(status=="True")#'

DEFAULT_KUBEFLOW_JOB_PRIMARY_POD_LABELS = {"training.kubeflow.org/job-role": "master"}
DEFAULT_TRAINJOB_PRIMARY_POD_LABELS = {
    "jobset.sigs.k8s.io/replicatedjob-name": "node",
    "batch.kubernetes.io/job-completion-index": "0",
}

#: The kind of a Kubernetes Job (consts.JobKindJob), and Katib's KubeflowJobKinds (TrainJob among them).
JOB_KIND = "Job"
TRAINJOB_KIND = "TrainJob"
KUBEFLOW_JOB_KINDS = frozenset({"TFJob", "PyTorchJob", "XGBoostJob", "MPIJob", TRAINJOB_KIND})

PARAMETER_DOUBLE = "double"
PARAMETER_INT = "int"
PARAMETER_DISCRETE = "discrete"
PARAMETER_CATEGORICAL = "categorical"
PARAMETER_UNKNOWN = "unknown"
PARAMETER_TYPES = (
    PARAMETER_INT,
    PARAMETER_DOUBLE,
    PARAMETER_CATEGORICAL,
    PARAMETER_DISCRETE,
    PARAMETER_UNKNOWN,
)

DISTRIBUTION_UNIFORM = "uniform"
DISTRIBUTION_LOG_UNIFORM = "logUniform"
DISTRIBUTION_NORMAL = "normal"
DISTRIBUTION_LOG_NORMAL = "logNormal"
DISTRIBUTION_UNKNOWN = "unknown"
DISTRIBUTIONS = (
    DISTRIBUTION_UNIFORM,
    DISTRIBUTION_LOG_UNIFORM,
    DISTRIBUTION_NORMAL,
    DISTRIBUTION_LOG_NORMAL,
    DISTRIBUTION_UNKNOWN,
)

# --- Objective and metrics collectors (common/v1beta1/common_types.go) ---------------------------------

OBJECTIVE_MINIMIZE = "minimize"
OBJECTIVE_MAXIMIZE = "maximize"

EXTRACT_BY_MIN = "min"
EXTRACT_BY_MAX = "max"
EXTRACT_BY_LATEST = "latest"

STDOUT_COLLECTOR = "StdOut"
FILE_COLLECTOR = "File"
TFEVENT_COLLECTOR = "TensorFlowEvent"
PROMETHEUS_COLLECTOR = "PrometheusMetric"
CUSTOM_COLLECTOR = "Custom"
PUSH_COLLECTOR = "Push"

DEFAULT_FILE_PATH = "/var/log/katib/metrics.log"
DEFAULT_TFEVENT_DIR_PATH = "/var/log/katib/tfevent/"
DEFAULT_PROMETHEUS_PATH = "/metrics"
DEFAULT_PROMETHEUS_PORT = 8080

DIRECTORY_KIND = "Directory"
FILE_KIND = "File"
TEXT_FORMAT = "TEXT"
JSON_FORMAT = "JSON"

# --- Experiment status (experiment/util/status_util.go) -------------------------------------------------

#: The reason of a Succeeded condition that a budget raise may restart (IsCompletedExperimentRestartable).
EXPERIMENT_MAX_TRIALS_REACHED_REASON = "ExperimentMaxTrialsReached"

# --- Trial template substitution (controller.v1beta1/consts/const.go) ----------------------------------

TRIAL_PARAMETER_FORMAT = "${{trialParameters.{}}}"
TRIAL_PARAMETER_PATTERN = re.compile(r"\$\{trialParameters\.(.+?)\}")
TRIAL_META_PATTERN = re.compile(r"\$\{trialSpec\.(.+?)\}")
TRIAL_META_INDEX_PATTERN = re.compile(r"(.+)\[(.+)]")
TRIAL_META_KEYS = ("Name", "Namespace", "Kind", "APIVersion", "Annotations", "Labels")
