"""Enough of the Argo Workflows controller to run Workflows in the simulator (see docs/kubesim.md)."""

from kubesim.argo.controller import ArgoController
from kubesim.argo.scripting import OUTPUTS_ANNOTATION, NodeContext

__all__ = ["OUTPUTS_ANNOTATION", "ArgoController", "NodeContext"]
