"""Who may act in which Kubernetes namespace: grants, and the one permission every API and page uses."""
