"""The REST API of the spawner: /api/tensorboards/ (read the mirror; spawn, open and stop in the cluster)."""
