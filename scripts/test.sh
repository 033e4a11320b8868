#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, builds,
# then runs the native tests (Release, then Debug with ASan/UBSan, then the threads
# stress under ThreadSanitizer), checks the
# wasm artifacts, runs the TypeScript tests against both wasm builds, the
# benchmark helpers' unit tests, and the runtime tests (Deno, workerd, Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${ADAPTREE_JOBS:-2}"
start=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - start ))s)"; }

step "build (wasm, TypeScript, native)"
bash scripts/build.sh all

step "ctest: native core, Release (differential: 1M operations per case, 9M per layout configuration)"
ADAPTREE_DIFF_OPS="${ADAPTREE_DIFF_OPS:-1000000}" ctest --test-dir build/native --output-on-failure -j "$jobs"

step "ctest: native core, Debug + ASan/UBSan (fewer differential operations)"
# -O1: asserts stay on (Debug), and the tests run 2.4x faster than at -O0 (measured on the
# slowest three), which is what ASan's own docs advise for speed.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DADAPTREE_SANITIZE=ON -DADAPTREE_WASM=OFF >/dev/null
cmake --build build/asan -j "$jobs" --target adaptree_core_tests
ADAPTREE_DIFF_OPS="${ADAPTREE_ASAN_DIFF_OPS:-50000}" ADAPTREE_THREAD_OPS="${ADAPTREE_TSAN_THREAD_OPS:-10000}" ADAPTREE_BIG_STORE_KEYS=100000 ctest --test-dir build/asan --output-on-failure -j "$jobs"

step "native threads stress, ThreadSanitizer (several threads on one tree through the C ABI)"
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DADAPTREE_TSAN=ON -DADAPTREE_WASM=OFF >/dev/null
cmake --build build/tsan -j "$jobs" --target adaptree_threads_test
# history_size=7: the optimistic reads that tsan.supp names are matched by their stack; with the
# default history TSan once could not restore a reader's stack ("failed to restore the stack")
# and reported the race against the writer alone (a clean-clone run, session 17).
TSAN_OPTIONS="halt_on_error=1 history_size=7 suppressions=$PWD/tests/core/tsan.supp" ADAPTREE_THREAD_OPS="${ADAPTREE_TSAN_THREAD_OPS:-10000}" build/tsan/adaptree_threads_test

if ls tests/fuzz/*.cc >/dev/null 2>&1; then
  step "libFuzzer: short run of each target"
  # A cache made with another compiler makes cmake drop it and our -D options with it.
  if [ -f build/fuzz/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14' build/fuzz/CMakeCache.txt; then
    rm -rf build/fuzz
  fi
  cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DADAPTREE_FUZZ=ON -DADAPTREE_WASM=OFF \
    -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 >/dev/null
  targets=()
  for src in tests/fuzz/*.cc; do targets+=("$(basename "$src" .cc)"); done
  cmake --build build/fuzz -j "$jobs" --target "${targets[@]}"
  # Each run takes one core: $jobs targets at a time (run one by one, the other core idled for
  # the whole step, 80 s of a 15-minute suite).
  fuzz_one() {
    local name=$1 seeds=() d
    mkdir -p build/fuzz/corpus-"$name"
    # Run first, every time: inputs that once crashed the target (tests/fuzz/regressions/<target>)
    # and a seed corpus that reaches every edge longer runs reached (tests/fuzz/corpus/<target>).
    for d in tests/fuzz/regressions/"$name" tests/fuzz/corpus/"$name"; do
      [ -d "$d" ] && seeds+=("$d")
    done
    "build/fuzz/$name" -max_total_time="${ADAPTREE_FUZZ_SECONDS:-20}" -print_final_stats=1 \
      -artifact_prefix=build/fuzz/"$name"- build/fuzz/corpus-"$name" "${seeds[@]}" >build/fuzz/"$name".log 2>&1
  }
  fuzz_report() {
    local name=$1 f
    # The crash report and the input, so that a CI log is enough to reproduce it.
    tail -n 60 build/fuzz/"$name".log
    for f in build/fuzz/"$name"-crash-* build/fuzz/"$name"-leak-* build/fuzz/"$name"-timeout-*; do
      [ -f "$f" ] && { echo "input $f:"; od -A d -t x1 "$f" | head -n 40; }
    done
    return 0
  }
  for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    pids=()
    for name in "${batch[@]}"; do
      fuzz_one "$name" &
      pids+=($!)
    done
    failed=0
    for k in "${!batch[@]}"; do
      if wait "${pids[$k]}"; then
        echo "--- ${batch[$k]}"
        tail -n 3 build/fuzz/"${batch[$k]}".log
      else
        echo "--- ${batch[$k]} FAILED"
        fuzz_report "${batch[$k]}"
        failed=1
      fi
    done
    [ "$failed" = 0 ] || exit 1
  done
fi

step "wasm artifacts: SIMD, imports, exports; npm package contents"
node scripts/check-wasm.mjs
node scripts/check-pack.mjs
node tests/ts/level-suite.mjs   # adaptree/level: abstract-level's suite on the memory, async and persistent (node files) stores
node tests/package/e2e.mjs          # the packed tarball installed in a fresh project: Node (also a persistent level across processes) and Deno
node tests/package/e2e-vite.mjs     # ... built by vite, in headless Chromium: main thread and module worker (st, mt)
node tests/package/e2e-workerd.mjs  # ... bundled as a Cloudflare Worker (wasm as a module) under workerd

step "vitest: TypeScript API against the st and mt builds, runtimes"
npx vitest run

step "package types: the packed tarball type-checks in Node, DOM, Deno and Workers projects"
node tests/types/check.mjs
# (vite builds the demo without type-checking it: a type error there went unseen, session 30)
npx tsc --noEmit -p demo/tsconfig.json

if ls bench/test/*.test.mjs >/dev/null 2>&1; then
  step "node --test: benchmark helpers"
  node --test bench/test/
fi

step "all tests passed"
