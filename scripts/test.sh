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
echo "== pytest"
$BIN/pytest "$@"
