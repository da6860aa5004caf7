"""The custom resource of the toy EchoJob framework (echo_framework.py), installed by test_operator.py."""

from __future__ import annotations

from jobs.crd import JOB_COLUMNS, JOB_STATUS, RUN_POLICY, replica_specs
from kube.crds.definition import CustomResource
from kube.crds.schema import obj

ECHOJOB = CustomResource(
    kind="EchoJob",
    plural="echojobs",
    short_names=("echojob",),
    description="A toy training job for the tests.",
    spec=obj(
        {"echoReplicaSpecs": replica_specs("Echo", "Worker"), "runPolicy": RUN_POLICY},
        required=("echoReplicaSpecs",),
    ),
    status=JOB_STATUS,
    columns=JOB_COLUMNS,
)
