"""The HyperparamWorkflow controller: reconciled by hyperparam/reconcile.py, its own events mirrored into
Sweep rows; an event of any Workflow it owns (a batch that started, progressed or finished) reconciles the
sweep that owns it. The runtime and the queue import this module (kube.controller.registry)."""

from hyperparam.crd import HYPERPARAM_WORKFLOW
from hyperparam.manifests import LABEL_SWEEP_UID
from hyperparam.models import Sweep
from hyperparam.reconcile import COMPLETED_LABEL, reconcile_hyperparam_workflow
from kube.controller.mirror import mirror_handler
from kube.controller.registry import Owns, register
from kube.resources import WORKFLOW

register(
    HYPERPARAM_WORKFLOW.resource_type,
    reconcile_hyperparam_workflow,
    # Only our Workflows that Argo has not labelled completed are cached (a large sweep's finished batches
    # would take hundreds of MiB); a Workflow leaving the selector as it completes still reconciles its owner.
    owns=[Owns(WORKFLOW, label_selector=f"{LABEL_SWEEP_UID},{COMPLETED_LABEL}!=true")],
    mirror=mirror_handler(Sweep),
)
