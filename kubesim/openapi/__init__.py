"""The built-in kinds' OpenAPI schemas (Kubernetes 1.37, from the kubernetes-validate wheel): field
validation, the `/openapi/v3` documents `kubectl explain` reads. Loaded on first use, then cached."""
