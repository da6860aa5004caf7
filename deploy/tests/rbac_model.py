"""What the RBAC test needs to know besides the source: registry-driven resources, and who runs which code.

HINTS resolve the few resource arguments that come from runtime registries, by reading those registries
(so a new framework or controller is covered without touching this file). CODE_AREAS say which process
runs the code around each API call; PROCESS_AREAS say which areas each process of the deployment runs.
A call site that matches no pattern fails the RBAC test: say here who makes the new call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def _job_resources() -> list[Any]:
    """Every training job kind in every group it may be served in (Kubeflow's: see `needs_call`)."""
    from jobs import apigroups
    from jobs.frameworks import framework_class, kinds

    return [
        apigroups.job_resource(framework_class(kind), api_version)
        for kind in kinds()
        for api_version in apigroups.API_VERSIONS
    ]


def _kubeflow_controllers() -> list[Any]:
    """The controllers of Kubeflow's v1 kinds, which a deployment runs with JOBS_KUBEFLOW_V1 (the chart's
    kubeflow.installCRDs) whatever this test process registered."""
    from jobs import apigroups
    from jobs.frameworks import framework_class, kinds
    from kube.controller.registry import Controller

    return [
        Controller(
            apigroups.job_resource(framework_class(kind), apigroups.KUBEFLOW_API_VERSION),
            name=apigroups.controller_kind(kind, apigroups.KUBEFLOW_API_VERSION),
        )
        for kind in kinds()
    ]


def _controllers() -> list[Any]:
    """The deployed apps' controllers. Test-only controllers that earlier tests in the same process
    registered (e.g. kube's sample controller on ConfigMaps) are never deployed and need no grant."""
    from kube.controller.queue import UnknownKindError
    from kube.controller.queue import registry as reconcilers
    from kube.controller.registry import registry

    def deployed(controller: Any) -> bool:
        try:
            module = reconcilers.lookup(controller.kind).__module__
        except UnknownKindError:
            return True
        return ".tests." not in f".{module}."

    deployed_controllers = [controller for controller in registry.controllers() if deployed(controller)]
    known = {controller.kind for controller in deployed_controllers}
    optional = [*_kubeflow_controllers(), *_trainer_controllers()]
    return deployed_controllers + [c for c in optional if c.kind not in known]


def _trainer_controllers() -> list[Any]:
    """The TrainJob and runtime controllers, which a deployment runs with TRAINER_ENABLED (the chart's
    trainer.installCRDs) whatever this test process registered."""
    from trainer import controllers

    return [controllers.declaration(), *controllers.runtime_controllers()]


def _pod_group_resources() -> list[Any]:
    from jobs.gang import POD_GROUP_RESOURCES

    return list(POD_GROUP_RESOURCES.values())


def _child_kinds() -> list[Any]:
    """Each operator's children, by the verbs its plans write them with
    (`kube.controller.children.ChildKinds`)."""
    from jobs.reconcile import JOB_CHILDREN
    from trainer.reconcile import TRAIN_JOB_CHILDREN

    return [JOB_CHILDREN, TRAIN_JOB_CHILDREN]


def _watched_resources() -> list[Any]:
    """What the informers list and watch: each controller's own kind and the kinds it owns (the job
    controllers own the PodGroups of the gang scheduler the deployment names, see `needs_call`)."""
    owned = [rtype for c in _controllers() for rtype in (c.rtype, *(owned.rtype for owned in c.owns))]
    return owned + _pod_group_resources()


def _event_resources() -> list[Any]:
    """The two APIs a recorder writes Events through (TrainJobs: core v1, see `needs_call`)."""
    from kube.resources import CORE_EVENT, EVENT

    return [EVENT, CORE_EVENT]


def _public_configmap_resources() -> list[Any]:
    from trainer import public

    return list(public.TYPES.values())


HINTS: dict[tuple[str, str], Callable[[], Iterable[Any]]] = {
    ("kube.controller.informer", "self.rtype"): _watched_resources,
    ("kube.controller.runtime", "registry.controllers()"): lambda: [_controllers()],
    ("jobs.reconcile", "apigroups.job_resource(framework, api_version)"): _job_resources,
    (
        "jobs.actions",
        "apigroups.job_resource(framework_class(body['kind']), body['apiVersion'])",
    ): _job_resources,
    ("jobs.actions", "apigroups.job_resource(framework_class(kind), api_version)"): _job_resources,
    ("jobs.reconcile", "scheduler.resource"): _pod_group_resources,
    ("jobs.reconcile", "change.resource"): _pod_group_resources,
    ("trainer.reconcile", "pod_group_type"): _pod_group_resources,
    ("kube.controller.children", "self.kinds"): _child_kinds,
    ("kube.events", "self.api"): lambda: _event_resources(),
    ("trainer.public", "rtype"): lambda: _public_configmap_resources(),
}

#: Kubeflow's group: its jobs are served with the chart's kubeflow.installCRDs (JOBS_KUBEFLOW_V1).
KUBEFLOW_GROUP = "kubeflow.org"
#: Kubeflow Trainer's group: its kinds are ours with the chart's trainer.installCRDs (TRAINER_ENABLED), and
#: its runtimes are installed with trainer.installRuntimes (the Job's own ServiceAccount).
TRAINER_GROUP = "trainer.kubeflow.org"
#: The API group of each gang scheduler's PodGroups (jobs.gangScheduler in the chart).
GANG_GROUPS = {"volcano": "scheduling.volcano.sh", "scheduler-plugins": "scheduling.x-k8s.io"}


def needs_call(
    group: str, resource: str, gang_scheduler: str, kubeflow: bool = False, trainer: bool = False
) -> bool:
    """Whether a deployment with `gang_scheduler` (none, volcano, scheduler-plugins) and Kubeflow's v1 kinds
    and Trainer's kinds served or not makes a call the code can make: PodGroups only of the scheduler it
    names, PriorityClasses only with one, Kubeflow's and Trainer's groups only when served."""
    if group == KUBEFLOW_GROUP:
        return kubeflow
    if group == TRAINER_GROUP:
        return trainer
    if (group, resource) == ("", "events"):
        return trainer  # core v1 Events: only the TrainJob controller records them (as Trainer does)
    if (group, resource) == ("", "persistentvolumeclaims"):
        return trainer  # the claims of a runtime's volumeClaimPolicies (trainer/operator/claims.py)
    if resource.startswith("podgroups"):
        return GANG_GROUPS.get(gang_scheduler) == group
    if resource == "priorityclasses":
        return gang_scheduler in GANG_GROUPS
    return True


WEB = "web"  # request handlers: API, dashboard, admin
RECONCILE = "reconcile"  # tasks of the `reconcile` queue
TASKS = "tasks"  # tasks of the `default` queue: GC, resync, culling
WATCH = "watch"  # the leader-elected informers of the controller worker
WEBHOOK_CERTS = "webhook-certs"  # manage.py webhook_certs, run by the chart's Jobs
WEBHOOKS = "webhooks"  # the webhook listener's cluster calls: the scale check, a TrainJob's runtime, progress
INSTALL_RUNTIMES = "install-runtimes"  # manage.py install_runtimes, run by the chart's Job
NOT_DEPLOYED = "not-deployed"  # development commands: the chart installs the CRDs itself

#: `module:function` patterns (fnmatch, first match wins) → the areas whose processes run that code. A
#: function also runs wherever its callers run (found in the source), so only entry points need a line.
CODE_AREAS: list[tuple[str, frozenset[str]]] = [
    ("jobs.actions:*", frozenset({WEB})),
    ("hyperparam.actions:*", frozenset({WEB})),
    ("pipelines.actions:*", frozenset({WEB})),
    ("trainer.runtimes.actions:*", frozenset({WEB})),  # the runtime admin's edits and deletions
    ("tensorboard.actions:cull_idle", frozenset({TASKS})),
    ("tensorboard.actions:*", frozenset({WEB})),
    ("tensorboard.api.*", frozenset({WEB})),
    ("dashboard.*", frozenset({WEB})),
    ("*.reconcile:*", frozenset({RECONCILE})),
    ("trainer.runtimes.finalizer:*", frozenset({RECONCILE})),
    ("trainer.runtimes.usage:*", frozenset({RECONCILE})),
    ("kube.controller.children:*", frozenset({RECONCILE})),  # the operators' child writes (their reconciles)
    # Events are recorded by reconciles and by the culling task.
    ("kube.events:*", frozenset({RECONCILE, TASKS})),
    ("garbage.collector:*", frozenset({TASKS})),
    ("kube.controller.runtime:listed_keys", frozenset({TASKS})),  # resync_all outside the leading process
    ("kube.controller.informer:*", frozenset({WATCH})),
    ("kube.controller.leader:*", frozenset({WATCH})),
    ("webhooks.management.commands.webhook_certs:*", frozenset({WEBHOOK_CERTS})),
    ("webhooks.scaling:*", frozenset({WEBHOOKS})),
    ("webhooks.trainjobs:*", frozenset({WEBHOOKS})),
    ("trainer.runtimes.install:*", frozenset({INSTALL_RUNTIMES})),
    # install_runtimes --public-configmap: make run's simulator only (the chart renders those objects).
    ("trainer.public:*", frozenset({NOT_DEPLOYED})),
    ("trainer.progress.reporting:*", frozenset({WEBHOOKS})),  # pods' progress reports (KEP-2779)
    ("kube.crds.install:*", frozenset({NOT_DEPLOYED})),
    ("webhooks.management.commands.dev_webhooks:*", frozenset({NOT_DEPLOYED})),  # make run's simulator only
    # the artifact repository's Secret in the dev namespaces: make run's simulator only
    ("argoml_site.management.commands.dev_artifacts:*", frozenset({NOT_DEPLOYED})),
]

#: The entrypoint command of each workload (deploy/docker-entrypoint.sh) → the code areas it runs.
PROCESS_AREAS: dict[str, frozenset[str]] = {
    "web": frozenset({WEB}),
    # Admission reviews: only the scale check reads the cluster (the injection rules are in the database);
    # TrainJob progress reports: TokenReview, the reporting pod, the TrainJob's status.
    "webhooks": frozenset({WEBHOOKS}),
    "controller": frozenset({WATCH, RECONCILE}),  # queue `reconcile` + the informers
    "worker": frozenset({RECONCILE, TASKS}),  # queues `reconcile` and `default`
    "beat": frozenset(),
    "migrate": frozenset(),
    "wait-for-migrations": frozenset(),
    "webhook-certs": frozenset({WEBHOOK_CERTS}),
    "install-runtimes": frozenset({INSTALL_RUNTIMES}),
}
