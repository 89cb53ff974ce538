#!/usr/bin/env bash
# `npm run bench:app`: the canvas benchmark in the REAL app (WebKitGTK under Xvfb, driven by tauri-driver +
# WebKitWebDriver, as scripts/e2e.sh does). Builds the UI and the app with the UI embedded, then runs bench/app.mjs,
# which prints one JSON line per figure and a summary line. Needs what `bash scripts/setup.sh` installs (Xvfb,
# webkit2gtk-driver, tauri-driver). SKIP_BUILD=1 reuses dist/ and target/debug/switchyard-app as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in xvfb-run WebKitWebDriver tauri-driver; do
  command -v "$tool" >/dev/null || { echo "bench:app needs $tool: run \`bash scripts/setup.sh\` first" >&2; exit 1; }
done
if [ -z "${SKIP_BUILD:-}" ]; then
  npx vite build --logLevel warn
  # The binary in target/debug is whichever variant was built last: build the embedded one right before running.
  cargo build -q -p switchyard-app --features tauri/custom-protocol
fi
[ -f dist/bench-bare.html ] || { echo "dist/bench-bare.html is missing: run without SKIP_BUILD" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home"
# The app starts on a small example; the benchmark opens its own workflows (written to $work) through the Open button.
export SWITCHYARD_HOME="$work/home" SWITCHYARD_OPEN="$PWD/examples/approval-flow.yaml" BENCH_DIR="$work"
# Ports apart from `npm run e2e`'s (4444, and 4445 for WebKitWebDriver) so both can run at once.
port=${BENCH_DRIVER_PORT:-4454}
export BENCH_DRIVER_PORT=$port
xvfb-run -a -s "-screen 0 1400x900x24" bash -c '
  tauri-driver --port '"$port"' --native-port '"$((port + 1))"' > "$BENCH_DIR/tauri-driver.log" 2>&1 &
  driver=$!
  for i in $(seq 1 50); do (echo > /dev/tcp/127.0.0.1/'"$port"') 2>/dev/null && break; sleep 0.2; done
  node bench/app.mjs; status=$?
  kill $driver
  exit $status'
