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
echo "== mypy"
$BIN/mypy .
echo "== django checks"
$BIN/python manage.py check --fail-level WARNING
$BIN/python manage.py makemigrations --check --dry-run
if [ "$#" -gt 0 ]; then
  echo "== pytest $*"
  exec $BIN/pytest "$@"
fi
# The whole suite as two pytest processes, so the 2-core machine's waits overlap: kubesim/ and webhooks/
# (no fixed Redis databases, no queue workers) beside the rest, each with its own test database and Redis
# database and its own temporary folder.
SIDE=(kubesim/tests webhooks/tests)
mkdir -p .dev
echo "== pytest: ${SIDE[*]} (in the background) and the rest"
side_redis="${REDIS_URL%/}"
[[ "$side_redis" =~ /[0-9]+$ ]] && side_redis="${side_redis%/*}"
DATABASE_URL="${DATABASE_URL%/*}/postgres" REDIS_URL="$side_redis/5" \
  $BIN/pytest "${SIDE[@]}" -p no:cacheprovider --basetemp=.dev/pytest-side >.dev/pytest-side.log 2>&1 &
side=$!
status=0
$BIN/pytest $(printf -- '--ignore=%s ' "${SIDE[@]}") || status=$?
side_status=0
wait "$side" || side_status=$?
echo "== pytest ${SIDE[*]} (exit $side_status)"
cat .dev/pytest-side.log
[ "$status" -eq 0 ] && [ "$side_status" -eq 0 ]
