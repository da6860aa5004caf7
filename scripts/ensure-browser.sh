#!/usr/bin/env bash
# The browser tests drive Debian's Chromium through Playwright; install it when it is missing.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "Chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "error: /usr/bin/chromium is missing; install Debian's 'chromium' package (needs root)." >&2
  exit 1
fi
echo "Installing Debian's chromium for the browser tests…"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
echo "Chromium: $(/usr/bin/chromium --version)"
