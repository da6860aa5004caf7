"""HyperparamWorkflow → the Argo Workflow that runs every combination of a search space; trials."""
