#!/usr/bin/env bash
# `npm run bench:app`: the canvas benchmark in the REAL app (WebKitGTK under Xvfb, driven by tauri-driver +
# WebKitWebDriver, as scripts/e2e.sh does). Builds the UI and the app with the UI embedded, then runs bench/app.mjs,
# which prints one JSON line per figure and a summary line. Needs what `bash scripts/setup.sh` installs (Xvfb,
# webkit2gtk-driver, tauri-driver). SKIP_BUILD=1 reuses the last build (target/bench-app).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in xvfb-run WebKitWebDriver tauri-driver; do
  command -v "$tool" >/dev/null || { echo "bench:app needs $tool: run \`bash scripts/setup.sh\` first" >&2; exit 1; }
done
# Its own copies of the built UI and of the app binary (target/bench-app/): other builds on the same machine rewrite
# dist/ and target/debug/switchyard-app (a plain `cargo build` makes the variant that loads the dev server), and an
# app compiled while dist/ was being rewritten embeds no page at all ("asset not found: index.html").
bench_dir="$PWD/target/bench-app"
mkdir -p "$bench_dir"
if [ -z "${SKIP_BUILD:-}" ]; then
  if [ -n "${BENCH_DIST:-}" ]; then # a UI built elsewhere (another revision, say) instead of this tree's
    rm -rf "$bench_dir/dist" && cp -r "$BENCH_DIST" "$bench_dir/dist"
  else
    npx vite build --logLevel warn --outDir "$bench_dir/dist" --emptyOutDir
  fi
  # TAURI_CONFIG is merged into tauri.conf.json: the app embeds this UI, not dist/.
  TAURI_CONFIG="{\"build\":{\"frontendDist\":\"$bench_dir/dist\"}}" cargo build -q -p switchyard-app --features tauri/custom-protocol
  cp target/debug/switchyard-app "$bench_dir/switchyard-app.tmp"
  mv "$bench_dir/switchyard-app.tmp" "$bench_dir/switchyard-app"
fi
[ -f "$bench_dir/dist/bench-bare.html" ] && [ -x "$bench_dir/switchyard-app" ] || { echo "target/bench-app is missing its build: run without SKIP_BUILD" >&2; exit 1; }
export BENCH_APP="${BENCH_APP:-$bench_dir/switchyard-app}"
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
