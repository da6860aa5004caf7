"""The controller runtime: what turns a change in the cluster into a reconcile, and a reconcile into writes.

Over kube's API boundary (client, errors, resources, events, rate limits) and never under it: the
leader-elected watch loops (`leader`, `informer`, `runtime`, `bootstep`; settings in `conf`), the key
sink and the never-lost reconcile queue (`keysink`, `queue/`), the informer cache a reconcile reads and
the expectations of its own writes (`cachedview`, `expectations`), the database mirror of watch events
(`mirror/`), and the operators' shared child applier and status writer (`children`).

One way to add a controller (docs/controllers.md, "Declaring a controller"): in `<app>/controllers.py`,
which the runtime and the queue both import by themselves in every installed app,

    register(TENSORBOARD, reconcile_tensorboard, owns=[Owns(DEPLOYMENT, ...), SERVICE], mirror=...)

(`kube.controller.registry.register`): the kind, the function that reconciles each of its keys in any
worker, and what the leader watches and mirrors. Periodic work that is not a reconcile (garbage
collection, TensorBoard culling, the resync) is a Celery beat task instead, never a controller.
"""
