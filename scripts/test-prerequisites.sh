#!/usr/bin/env bash
# What the test suite needs from the machine beyond npm packages, installed when missing (run
# by `npm test` before vitest, and so by .ci/run): the PostgreSQL server running, pgvector for
# it (the server engine's vector tests), and Debian's Chromium with fonts (the web client's
# browser tests). Installing needs root, as on the project's machines; elsewhere it says what
# is missing, and the tests that need it fail rather than skip.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi

if [ "$(id -u)" -ne 0 ]; then
  [ -f "/usr/share/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/extension/vector.control" ] \
    || echo "pgvector is missing: run 'sudo bash scripts/install-pgvector.sh' (the server engine's vector tests fail without it)"
  [ -x /usr/bin/chromium ] \
    || echo "Chromium is missing: run 'sudo apt-get install -y chromium fonts-noto-color-emoji fonts-nanum'"
  exit 0
fi

# Debian 12 ships no pgvector binary: built from Debian's source package (about 20 s).
bash scripts/install-pgvector.sh \
  || echo "could not install pgvector: the server engine's vector tests will fail"

# The fonts are for the emoji and Korean text in the screenshot the browser tests take.
if [ ! -x /usr/bin/chromium ]; then
  echo "--- apt-get install chromium"
  (apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji fonts-nanum) \
    || echo "could not install chromium: the browser tests will fail"
fi
exit 0
