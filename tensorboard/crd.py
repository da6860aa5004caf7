"""Tensorboard: a TensorBoard Deployment and Service reading a list of log directories."""

from __future__ import annotations

from kube.crds.definition import AGE, CustomResource, PrinterColumn
from kube.crds.schema import (
    Schema,
    array,
    boolean,
    conditions,
    date_time,
    int_or_string,
    integer,
    map_of,
    obj,
    string,
)

# Go's time.ParseDuration syntax, which kubectl users know: 2h, 90m, 1h30m.
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"


def _secret_key(description: str) -> Schema:
    return obj(
        {
            "name": string("A Secret in the Tensorboard's namespace.", min_length=1),
            "key": string(min_length=1),
        },
        description,
        required=("name", "key"),
    )


TENSORBOARD = CustomResource(
    kind="Tensorboard",
    plural="tensorboards",
    short_names=("tb",),
    description="A TensorBoard instance reading workflow artifacts from object storage or volumes.",
    spec=obj(
        {
            "logdirs": array(
                obj(
                    {
                        "name": string("The run name TensorBoard shows.", min_length=1),
                        "path": string(
                            "s3://bucket/key, http(s)://…, gs://bucket/key or pvc://<claim>/<subpath>; no "
                            "commas (TensorBoard's --logdir_spec separates runs with them). S3, GCS and "
                            "HTTP artifacts are fetched into the pod.",
                            pattern=r"^(s3://|gs://|pvc://|https?://)[^,]+$",
                        ),
                        "archive": string(
                            "tar: a tar or tar.gz archive (Argo's default) the pod unpacks; zip: a zip "
                            "archive it unpacks; none (default): files as saved.",
                            enum=("none", "tar", "zip"),
                        ),
                    },
                    required=("name", "path"),
                ),
                "The log directories, one run each.",
                min_items=1,
            ),
            "workflowRef": obj(
                {
                    "kind": string(
                        "Workflow (default), HyperparamWorkflow, or a training job kind (TFJob, MXJob, "
                        "PyTorchJob, XGBoostJob, JAXJob, PaddleJob, MPIJob, TrainJob).",
                        enum=(
                            "Workflow",
                            "HyperparamWorkflow",
                            "TFJob",
                            "MXJob",
                            "PyTorchJob",
                            "XGBoostJob",
                            "JAXJob",
                            "PaddleJob",
                            "MPIJob",
                            "TrainJob",
                        ),
                    ),
                    "name": string(min_length=1),
                },
                "What the logdirs were collected from.",
                required=("name",),
            ),
            "s3": obj(
                {
                    "endpoint": string("host[:port] of an S3-compatible store such as MinIO; empty for AWS."),
                    "region": string(),
                    "insecure": boolean("Plain HTTP to the endpoint."),
                    "accessKeySecret": _secret_key("The access key (AWS_ACCESS_KEY_ID)."),
                    "secretKeySecret": _secret_key("The secret key (AWS_SECRET_ACCESS_KEY)."),
                },
                "Where s3:// logdirs live; the spawner copies it from the workflow's artifact repository. "
                "Credentials default to the Secret configured for the spawner.",
            ),
            "gcs": obj(
                {
                    "serviceAccountKeySecret": _secret_key(
                        "A service-account key (JSON) that may read the gs:// logdirs; left out: the "
                        "Secret configured for the spawner, else the pod's own identity (workload identity)."
                    ),
                },
                "How gs:// logdirs are read; the spawner copies it from the workflow's artifact repository.",
            ),
            "syncSeconds": integer(
                "Fetch the S3, GCS and HTTP artifacts again this often (a sidecar), for a source still "
                "running; left out: once, before TensorBoard starts.",
                minimum=1,
            ),
            "image": string("The TensorBoard image; the configured default when left out."),
            "resources": obj(
                {
                    "requests": map_of(int_or_string(), "Quantities, e.g. cpu: 100m."),
                    "limits": map_of(int_or_string()),
                },
                "Requests and limits of the TensorBoard container (defaults from settings).",
            ),
            "idleTimeout": string(
                "Delete the instance after it has not been opened for this long (default 2h).",
                pattern=DURATION_PATTERN,
            ),
        },
        required=("logdirs",),
    ),
    status=obj(
        {
            "phase": string(enum=("Pending", "Ready", "Failed")),
            "url": string("Where the TensorBoard is served."),
            "message": string(),
            "conditions": conditions(),
            "lastAccess": date_time("When the API or the dashboard last opened it."),
            "fetchProblems": array(
                obj(
                    {"run": string(), "url": string(), "reason": string()},
                    "A run whose artifact the pod could not fetch, and why.",
                ),
                "Runs left out of the TensorBoard; the others are shown.",
            ),
            "observedGeneration": integer(bits=64),
        },
        "Written by the controller only.",
        preserve_unknown=True,
    ),
    columns=(
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("URL", "string", ".status.url"),
        AGE,
    ),
)
