#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (unit, model, integration).
# Exits non-zero on any failure. Extra arguments go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
status=0
meson test -C build --no-rebuild --print-errorlogs --num-processes 2 "$@" || status=$?
# One plain summary line for CI, counted from meson's own log.
python3 - <<'PY'
import json
passed = failed = 0
with open('build/meson-logs/testlog.json') as f:
    for line in f:
        r = json.loads(line).get('result')
        if r in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif r is not None and r != 'SKIP':
            failed += 1
print(f"{passed} passed, {failed} failed")
PY
exit $status
