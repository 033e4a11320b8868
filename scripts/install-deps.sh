#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian 12 machine, and
# nothing when it is already there: emscripten (wasm compiler, with binaryen),
# clang-14 + libFuzzer runtime, GoogleTest, Chromium (browser tests), ninja,
# and the npm packages. It checks the Node.js version first: developing needs
# Node >= 20.19 (vite 8 and rolldown; Node 22.12+ on the 22 line), which Debian
# 12's own nodejs package (18) is not. The library itself needs less at run time
# (README, "Requirements").
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "install-deps: $*" >&2; }
die() { echo >&2; echo "install-deps: $*" >&2; exit 1; }

# --- Node.js: checked before anything is installed or built.
node_help="Install Node.js 22 (LTS), for example from NodeSource as root:
    curl -fsSL https://deb.nodesource.com/setup_22.x | bash -
    apt-get install -y nodejs
  or with nvm (https://github.com/nvm-sh/nvm) as any user: nvm install 22
  then open a new shell and run this again."
command -v node >/dev/null || die "Node.js is not installed; building adaptree needs Node >= 20.19 with npm.
  $node_help"
node_version=$(node -p 'process.versions.node')
if ! node -e '
  const [a, b] = process.versions.node.split(".").map(Number);
  process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a >= 23 ? 0 : 1);'; then
  die "Node.js $node_version cannot build adaptree: developing needs Node 20.19+ or 22.12+ (or
  any later release), what vite 8 and rolldown support. Debian 12's own nodejs package is 18.
  $node_help"
fi
command -v npm >/dev/null || die "npm is missing (Node.js $node_version is there). Debian splits it out: apt-get install -y npm, or install Node.js 22 with npm:
  $node_help"

# --- Debian packages.
declare -A why=(
  [emscripten]="compiles the C++ core to wasm (emcc)"
  [lld-14]="links the wasm modules (wasm-ld-14)"
  [binaryen]="inspects the wasm modules (wasm-dis)"
  [chromium]="runs the browser tests and benchmarks headless"
  [ninja-build]="build tool for cmake"
  [cmake]="configures the native and wasm builds"
  [clang-14]="compiles the fuzz targets"
  [libclang-rt-14-dev]="libFuzzer runtime"
  [libgtest-dev]="GoogleTest headers and library (native unit tests)"
  [googletest]="GoogleTest sources"
)
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
  say "installing ${#need[@]} Debian packages (and what they depend on):"
  for p in "${need[@]}"; do printf '  %-20s %s\n' "$p" "${why[$p]}" >&2; done
  command -v apt-get >/dev/null || die "apt-get not found: this script expects Debian 12. Install the packages above yourself."
  if [ "$(id -u)" = 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null; then
    SUDO=(sudo)
    say "not root: using sudo for apt-get"
  else
    die "installing Debian packages needs root: run this as root (or where sudo works), or as root first
    apt-get update && apt-get install -y ${need[*]}"
  fi
  say "on a fresh machine this takes several minutes; apt prints the download size and its progress below"
  say "apt-get update"
  "${SUDO[@]}" apt-get update
  say "apt-get install -y ${need[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
  say "Debian packages installed"
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages into node_modules/ (TypeScript, vitest, vite, deno, workerd, benchmark anchors; about 1 minute)"
  say "two npm warnings are expected and harmless (README, \"Requirements\"):"
  say "  EBADENGINE for @sqlite.org/sqlite-wasm under Node < 22: it runs only inside Chromium, in the benchmark"
  say "  'install scripts not yet covered by allowScripts' (npm 11): those 5 packages work from their prebuilt binaries"
  # `npm ci`: exactly the lock's versions. The lock lists every platform's optional binaries
  # (deno, workerd, msgpackr; scripts/lock-platforms.mjs), which npm ci insists on.
  say "npm ci"
  npm ci --no-audit --no-fund
fi
