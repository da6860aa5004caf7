"""The TrainJob operator's pure stages, without JobSet: a TrainJob and its runtime parsed once (`spec`,
`policies`, `readers`), joined (`resolution`), planned into pods, Service, ConfigMaps, claims, PodGroup and
SSH keys (`plan`, `claims`, `podgroup`, `sshkeys`) and summed up in its status (`status`). The loop that runs
them is `trainer/reconcile.py`, where kube's queue discovers every app's reconcilers."""
