"""The training job controllers: each framework's kind in each group is reconciled by the one loop
(jobs/reconcile.py), owns its pods and services, and is mirrored into TrainingJob rows; its pods are
mirrored into Replica rows. The runtime and the queue import this module (kube.controller.registry)."""

from __future__ import annotations

from jobs import apigroups, conf
from jobs.frameworks import Framework, framework_class, kinds
from jobs.manifests import LABEL_JOB_NAME
from jobs.models import Replica, TrainingJob
from jobs.reconcile import reconciler_for
from kube.controller.mirror import mirror_handler
from kube.controller.registry import Controller, Owns, register
from kube.resources import CONFIGMAP, POD, SERVICE

job_resource = apigroups.job_resource


def register_job_controller(
    framework: type[Framework], api_version: str = apigroups.ARGOML_API_VERSION
) -> Controller:
    """Declare the controller of one framework's kind in one group (a new framework calls this once per
    group, see docs/adding-a-framework.md): its keys run the jobs loop in every group, and it is watched
    only in a group this deployment serves (Kubeflow's with JOBS_KUBEFLOW_V1). Children are watched by the
    job-name label, so the informer never caches pods that are not a training job's; their controller
    ownerReference says which group's job they belong to. With a gang scheduler the jobs' PodGroups are
    watched too: Volcano admitting one is what lets its job's pods be created. A framework with ConfigMaps
    of its own (MPI's hostfile) has them watched as well; Secrets never are (the operator may not read
    them)."""
    owns = [
        Owns(POD, label_selector=LABEL_JOB_NAME, mirror=mirror_handler(Replica)),
        Owns(SERVICE, label_selector=LABEL_JOB_NAME),
    ]
    if "ConfigMap" in framework.extra_child_kinds:
        owns.append(Owns(CONFIGMAP, label_selector=LABEL_JOB_NAME))  # MPI's hostfile
    scheduler = conf.gang_scheduler()
    if scheduler is not None:
        owns.append(Owns(scheduler.resource, label_selector=LABEL_JOB_NAME))
    kind = apigroups.controller_kind(framework.kind, api_version)
    return register(
        job_resource(framework, api_version),
        reconciler_for(kind),
        owns=owns,
        mirror=mirror_handler(TrainingJob),
        name=kind,
        watch=api_version in apigroups.served_api_versions(kubeflow=conf.kubeflow_v1()),
    )


for _kind in kinds():
    for _api_version in apigroups.API_VERSIONS:
        register_job_controller(framework_class(_kind), _api_version)
