"""The REST API of sweeps: /api/hyperparams/ (read the mirror; create and delete go to the cluster) and each
sweep's trials, filtered, ordered by metric, paged without counting, and exported as CSV."""
