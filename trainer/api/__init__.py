"""The REST API of TrainJobs and runtimes: /api/trainjobs/ (read the mirror; submit and delete go to the
cluster) and /api/trainingruntimes/ (read only)."""
