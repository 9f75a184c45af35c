#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite. Exits non-zero on any
# failure and ends with one line "N passed, N failed" counted over every build dir:
#   build/       gcc                   every suite of the project
#   build-fuzz/  clang + libFuzzer     fuzz: each target replays its seeds (captured from a
#                                      real transfer) and committed regression inputs, then
#                                      fuzzes for FUZZ_SECONDS (default 20) -- scripts/fuzz.sh
#   build-asan/  gcc, ASan + UBSan     with --sanitize: unit, model, integration;
#                                      --sanitize=unit,model picks suites
# Other arguments go to `meson test` (e.g. --suite unit): then only that selection runs,
# in build/, without the fuzz suite (and without --sanitize's default suites).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=
args=()
for a in "$@"; do
    case $a in
    --sanitize) sanitize=unit,model,integration ;;
    --sanitize=*) sanitize=${a#--sanitize=} ;;
    *) args+=("$a") ;;
    esac
done

./scripts/build.sh
status=0
logs=()
# Runs meson test in one build dir (already built); its log joins the summary.
suite() {
    local dir=$1 start=$SECONDS
    shift
    rm -f "$dir/meson-logs/testlog.json"
    meson test -C "$dir" --print-errorlogs --num-processes 2 "$@" || status=1
    logs+=("$dir/meson-logs/testlog.json")
    echo "== $dir: tests took $((SECONDS - start)) s"
}

suite build --no-rebuild "${args[@]}"
if [ ${#args[@]} -eq 0 ]; then
    ./scripts/fuzz.sh build
    suite build-fuzz --no-rebuild --suite fuzz
fi
if [ -n "$sanitize" ]; then
    if [ ! -f build-asan/build.ninja ]; then
        # -O0 (buildtype debug, asserts on): under ASan gcc takes 7x longer at -O3 on the
        # catch2 units; at -O0 the whole tree builds in about 3 minutes on 2 cores.
        # UBSan aborts at the first report (gcc's default only prints and goes on).
        # No -Werror here: gcc's warnings change with optimisation and instrumentation
        # (false maybe-uninitialized, format-truncation); build/ enforces them.
        # b_lundef=false: the sanitizer runtime resolves its symbols at load time.
        meson setup build-asan -Dbuildtype=debug -Dwerror=false \
            -Db_sanitize=address,undefined -Db_lundef=false \
            -Dcpp_args=-fno-sanitize-recover=undefined >/dev/null
    fi
    if [ ${#args[@]} -eq 0 ]; then
        for s in ${sanitize//,/ }; do
            args+=(--suite "$s")
        done
    fi
    # Without --no-rebuild, meson builds only what the chosen tests need.
    # DPDK needs nothing special under ASan: the EAL runs with --no-huge, so its memory
    # is plain anonymous mmap, and leak checking stays on (nothing leaks at exit).
    suite build-asan "${args[@]}"
fi

# One plain summary line for CI, counted from meson's own logs.
python3 - "${logs[@]}" <<'PY'
import json, os, sys
passed = failed = 0
for path in sys.argv[1:]:
    if not os.path.exists(path):
        failed += 1  # the suite did not even run
        continue
    with open(path) as f:
        for line in f:
            r = json.loads(line).get('result')
            if r in ('OK', 'EXPECTEDFAIL'):
                passed += 1
            elif r is not None and r != 'SKIP':
                failed += 1
print(f"{passed} passed, {failed} failed")
PY
exit $status
