#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian machine, and
# nothing when it is already there: emscripten (wasm compiler, with binaryen),
# clang-14 + libFuzzer runtime, GoogleTest, Chromium (browser tests), ninja,
# and the npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v emcc >/dev/null || need+=(emscripten)
command -v wasm-ld-14 >/dev/null || need+=(lld-14)
command -v wasm-dis >/dev/null || need+=(binaryen)
command -v chromium >/dev/null || need+=(chromium)
command -v ninja >/dev/null || need+=(ninja-build)
command -v cmake >/dev/null || need+=(cmake)
command -v clang++-14 >/dev/null || need+=(clang-14)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
[ -e /usr/include/gtest/gtest.h ] || need+=(libgtest-dev googletest)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need[*]}" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install`, not `npm ci`: npm 11 (with this machine's omit-lockfile-registry-resolved)
  # leaves other platforms' optional packages (deno, workerd, msgpackr) out of the lock file
  # and then `npm ci` refuses that lock as out of sync. `npm install` honours the pinned
  # versions in the lock all the same.
  echo "install-deps: npm install" >&2
  npm ci --no-audit --no-fund >/dev/null
fi
