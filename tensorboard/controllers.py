"""The Tensorboard controller: reconciles Tensorboards, owns their Deployment and Service (watched by the
tensorboard label, so no other Deployment is cached), and mirrors them into Tensorboard rows. The runtime
imports this module."""

from __future__ import annotations

from kube.controllers import Owns, register
from kube.mirror import mirror_handler
from kube.resources import DEPLOYMENT, SERVICE

from .crd import TENSORBOARD
from .manifests import LABEL_TENSORBOARD
from .models import Tensorboard

TENSORBOARD_RESOURCE = TENSORBOARD.resource_type

register(
    TENSORBOARD_RESOURCE,
    owns=[
        Owns(DEPLOYMENT, label_selector=LABEL_TENSORBOARD),
        Owns(SERVICE, label_selector=LABEL_TENSORBOARD),
    ],
    mirror=mirror_handler(Tensorboard),
)
