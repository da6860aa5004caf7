"""The HyperparamWorkflow controller: its own events are mirrored into Sweep rows, and an event of any
Workflow it owns (a batch that started, progressed or finished) reconciles the sweep that owns it."""

from hyperparam.crd import HYPERPARAM_WORKFLOW
from hyperparam.manifests import LABEL_SWEEP_UID
from hyperparam.models import Sweep
from hyperparam.reconcile import COMPLETED_LABEL
from kube.controllers import Owns, register
from kube.mirror import mirror_handler
from kube.resources import WORKFLOW

register(
    HYPERPARAM_WORKFLOW.resource_type,
    # Only our Workflows that Argo has not labelled completed are cached (a large sweep's finished batches
    # would take hundreds of MiB); a Workflow leaving the selector as it completes still reconciles its owner.
    owns=[Owns(WORKFLOW, label_selector=f"{LABEL_SWEEP_UID},{COMPLETED_LABEL}!=true")],
    mirror=mirror_handler(Sweep),
)
