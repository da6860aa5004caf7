"""The one boundary around the Kubernetes API: client, informers, reconcile queue, leader election, CRDs."""
