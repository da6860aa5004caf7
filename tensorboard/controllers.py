"""The Tensorboard controller: reconciles Tensorboards (tensorboard/reconcile.py), owns their Deployment
and Service (watched by the tensorboard label, so no other Deployment is cached), and mirrors them into
Tensorboard rows. The runtime and the queue import this module (kube.controller.registry)."""

from __future__ import annotations

from kube.controller.mirror import mirror_handler
from kube.controller.registry import Owns, register
from kube.resources import DEPLOYMENT, SERVICE

from .crd import TENSORBOARD
from .manifests import LABEL_TENSORBOARD
from .models import Tensorboard
from .reconcile import reconcile_tensorboard

TENSORBOARD_RESOURCE = TENSORBOARD.resource_type

register(
    TENSORBOARD_RESOURCE,
    reconcile_tensorboard,
    owns=[
        Owns(DEPLOYMENT, label_selector=LABEL_TENSORBOARD),
        Owns(SERVICE, label_selector=LABEL_TENSORBOARD),
    ],
    mirror=mirror_handler(Tensorboard),
)
