#!/usr/bin/env bash
# Builds everything a user of the package gets: the two wasm modules and the
# compiled TypeScript (dist/), plus the native core (build/native).
#   scripts/build.sh          everything
#   scripts/build.sh wasm     only the wasm modules (dist/wasm/)
#   scripts/build.sh ts       only the TypeScript (dist/)
#   scripts/build.sh native   only the native core, tests and benchmark
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
jobs="${ADAPTREE_JOBS:-2}"

bash scripts/install-deps.sh

build_wasm() {
  cmake -S . -B build/wasm -G Ninja -DCMAKE_BUILD_TYPE=Release -DADAPTREE_WASM=ON >/dev/null
  cmake --build build/wasm --target wasm_st wasm_mt -j "$jobs"
  # Source-tree runs (vitest on ts/src) find the modules where the package has them.
  ln -sfn ../../dist/wasm ts/src/wasm
}
build_ts() {
  # tsc never deletes: outputs of removed sources or options (old .d.ts.map files) would be
  # packed along. Start from dist/wasm alone.
  if [ -d dist ]; then find dist -mindepth 1 -maxdepth 1 ! -name wasm -exec rm -rf {} +; fi
  npx tsc -p tsconfig.json
}
build_native() {
  cmake -S . -B build/native -G Ninja -DCMAKE_BUILD_TYPE=Release -DADAPTREE_WASM=OFF -DADAPTREE_NATIVE_MARCH=ON >/dev/null
  cmake --build build/native -j "$jobs"
}

case "$what" in
  wasm) build_wasm ;;
  ts) build_ts ;;
  native) build_native ;;
  all) build_wasm; build_ts; build_native ;;
  *) echo "usage: scripts/build.sh [all|wasm|ts|native]" >&2; exit 2 ;;
esac
