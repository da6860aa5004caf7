"""The REST API of training jobs: /api/jobs/ (read the mirror; create and delete go to the cluster)."""
