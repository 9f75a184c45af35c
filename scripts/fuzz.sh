#!/usr/bin/env bash
# Fuzzes the core with libFuzzer (clang, ASan + UBSan):
#   scripts/fuzz.sh TARGET [SECONDS]   one of fuzz_codec, fuzz_frame, fuzz_endpoint
#                                      (or codec, frame, endpoint); default 60 s
#   scripts/fuzz.sh all [SECONDS]      each target in turn for SECONDS
#   scripts/fuzz.sh build              only configure and build build-fuzz
# Configures and builds ./build-fuzz when needed (the fuzz targets and the core only).
# Seeds come from a captured real transfer; what the fuzzer finds on top accumulates in
# build-fuzz/fuzz-corpus/TARGET across runs. A failing input is saved in
# test/fuzz/crashes/ and the command that reproduces it is printed; keep it as a
# regression in test/fuzz/regressions/TARGET/ (replayed by ./scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(fuzz_codec fuzz_frame fuzz_endpoint)
what=${1:?usage: scripts/fuzz.sh TARGET|all|build [SECONDS]}
seconds=${2:-60}

./scripts/install-deps.sh
if [ ! -f build-fuzz/build.ninja ]; then
    # -Dtests stays on (test/fuzz lives under test/); only the fuzz targets get built.
    CXX=clang++ meson setup build-fuzz -Dfuzz=true >/dev/null
fi
ninja -C build-fuzz fuzz-targets >/dev/null
[ "$what" = build ] && exit 0

case $what in
all) run=("${targets[@]}") ;;
fuzz_*) run=("$what") ;;
*) run=("fuzz_$what") ;;
esac
status=0
for t in "${run[@]}"; do
    if [ ! -x "build-fuzz/test/fuzz/$t" ]; then
        echo "unknown target $t (have: ${targets[*]})" >&2
        exit 2
    fi
    # Open regressions are reported but do not stop the search for new failures.
    test/fuzz/run_fuzz.sh replay "build-fuzz/test/fuzz/$t" build-fuzz/test/fuzz/gen_corpus || status=1
    mkdir -p "build-fuzz/fuzz-corpus/$t"
    FUZZ_SECONDS=$seconds FUZZ_CORPUS=$PWD/build-fuzz/fuzz-corpus/$t \
        test/fuzz/run_fuzz.sh fuzz "build-fuzz/test/fuzz/$t" build-fuzz/test/fuzz/gen_corpus || status=1
done
exit $status
