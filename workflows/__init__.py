"""Argo Workflow knowledge with no Django in it: the linter, builders, the pipeline transpiler."""
