"""Katib's Experiments (`kubeflow.org/v1beta1`, Katib 0.19) read as Katib reads them, for our sweep engine.

This first layer is pure (no Django, no cluster): Katib's defaults (`katib.defaults`), Katib's admission
validation in Katib's wording with what Argo-ML does not run refused by field (`katib.validation`), and the
plan our engine runs (`katib.plan`). An import-linter contract keeps Django and the cluster out.
"""
