"""Pipeline definitions transpiled into Argo Workflows: the API and the CLI."""
