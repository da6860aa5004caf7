#!/bin/sh
# The image's entrypoint: one command per process kind of ARCHITECTURE.md §6, so manifests say `args: [web]`
# instead of repeating command lines. Anything else is run as given (`docker run IMAGE python -V`).
#
#   web                   gunicorn (admin, dashboard, API, static files) over TLS,
#                         configured by deploy/gunicorn.conf.py
#   webhooks              gunicorn serving only the admission webhooks and probes over TLS (the listener
#                         the API server calls), configured by deploy/gunicorn_webhooks.conf.py
#   controller            Celery worker on queue `reconcile` running the Lease-elected watch loops
#   worker                Celery worker on queues `reconcile` and `default`
#   beat                  Celery beat with the database scheduler
#   migrate               manage.py migrate
#   wait-for-migrations   wait until the database has every migration (init containers), then exit 0
#   webhook-certs ARGS    manage.py webhook_certs ARGS
#   install-runtimes ARGS manage.py install_runtimes ARGS (Kubeflow Trainer's ready-made runtimes)
#   manage ARGS           manage.py ARGS
#
# Extra arguments after web/webhooks/controller/worker/beat are passed on (e.g. `worker --concurrency 8`).
set -eu

APP_DIR="${ARGOML_APP_DIR:-/app}"
PYTHON="${PYTHON:-python}"
MANAGE="$APP_DIR/manage.py"

# Samples of processes from before a container restart would be summed with the live ones: start empty.
# The directory is an emptyDir, so a restarted container (same pod) finds the previous one's files.
reset_metrics_dir() {
    if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
        mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
        find "$PROMETHEUS_MULTIPROC_DIR" -mindepth 1 -maxdepth 1 -name '*.db' -type f -delete
    fi
}

celery_worker() {
    node="$1"
    queues="$2"
    shift 2
    exec celery -A argoml_site worker \
        --queues "$queues" \
        --hostname "$node@${HOSTNAME:-%h}" \
        --concurrency "${CELERY_CONCURRENCY:-2}" \
        --without-mingle --without-gossip \
        --loglevel "${LOG_LEVEL:-INFO}" \
        "$@"
}

wait_for_migrations() {
    deadline=$(( $(date +%s) + ${MIGRATIONS_WAIT_SECONDS:-600} ))
    until "$PYTHON" "$MANAGE" migrate --check --noinput >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "wait-for-migrations: the database still lacks migrations after" \
                "${MIGRATIONS_WAIT_SECONDS:-600}s; is the migration Job running?" >&2
            "$PYTHON" "$MANAGE" migrate --check --noinput >&2 || true
            exit 1
        fi
        echo "wait-for-migrations: migrations pending, checking again in ${MIGRATIONS_WAIT_INTERVAL:-5}s" >&2
        sleep "${MIGRATIONS_WAIT_INTERVAL:-5}"
    done
    echo "wait-for-migrations: the database is migrated"
}

if [ "$#" -eq 0 ]; then
    set -- web
fi
command="$1"
shift

cd "$APP_DIR"
case "$command" in
    web)
        reset_metrics_dir
        exec gunicorn --config "$APP_DIR/deploy/gunicorn.conf.py" "$@"
        ;;
    webhooks)
        exec gunicorn --config "$APP_DIR/deploy/gunicorn_webhooks.conf.py" "$@"
        ;;
    controller)
        reset_metrics_dir
        # Threads: reconciles then run in the process whose informers hold the cache (docs/controllers.md).
        celery_worker controller reconcile --pool threads --controllers "$@"
        ;;
    worker)
        reset_metrics_dir
        celery_worker worker reconcile,default "$@"
        ;;
    beat)
        exec celery -A argoml_site beat \
            --scheduler django_celery_beat.schedulers:DatabaseScheduler \
            --loglevel "${LOG_LEVEL:-INFO}" \
            "$@"
        ;;
    migrate)
        exec "$PYTHON" "$MANAGE" migrate --noinput "$@"
        ;;
    wait-for-migrations)
        wait_for_migrations
        ;;
    webhook-certs)
        exec "$PYTHON" "$MANAGE" webhook_certs "$@"
        ;;
    install-runtimes)
        exec "$PYTHON" "$MANAGE" install_runtimes "$@"
        ;;
    manage)
        exec "$PYTHON" "$MANAGE" "$@"
        ;;
    *)
        exec "$command" "$@"
        ;;
esac
