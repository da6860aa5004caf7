"""The one boundary around the Kubernetes API (client, errors, resource types, events, rate limits, CRDs),
with the controller runtime over it in `kube.controller`."""
