"""The HyperparamWorkflow controller: its own events are mirrored into Sweep rows, and an event of any
Workflow it owns (a batch that started, progressed or finished) reconciles the sweep that owns it."""

from hyperparam.manifests import LABEL_SWEEP_UID
from hyperparam.models import Sweep
from kube.controllers import Owns, register
from kube.crds import HYPERPARAM_WORKFLOW
from kube.mirror import mirror_handler
from kube.resources import WORKFLOW

register(
    HYPERPARAM_WORKFLOW.resource_type,
    # Only our Workflows are cached, never every Workflow of the cluster.
    owns=[Owns(WORKFLOW, label_selector=LABEL_SWEEP_UID)],
    mirror=mirror_handler(Sweep),
)
