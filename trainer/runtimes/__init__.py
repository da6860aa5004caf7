"""TrainingRuntimes and ClusterTrainingRuntimes: the ready-made ones we ship (`catalog`, the `*.yaml` beside
it) and their install (`install`), the watch's mirror with revisions (`mirror`, `revisions`), the
`resource-in-use` finalizer (`finalizer`, `inuse`, `usage`), and the admin's and API's writes (`actions`)."""
