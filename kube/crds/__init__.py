"""The machinery our custom resource kinds are declared with (`definition`, `schema`), rendered into
deploy/crds/ (`render`) and installed into a cluster (`install`). The declarations live beside the app whose
fields they describe (`jobs/crd.py`, `hyperparam/crd.py`, `tensorboard/crd.py`, `trainer/crd.py`) and the
list of them in `argoml_site.crds`: kube imports no app."""

from __future__ import annotations

from .definition import GROUP, VERSION, CustomResource, PrinterColumn

__all__ = ["GROUP", "VERSION", "CustomResource", "PrinterColumn"]
