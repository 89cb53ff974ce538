#!/usr/bin/env bash
# `npm run e2e`: the real app under Xvfb, driven by tauri-driver + WebKitWebDriver. Builds the UI and the app with
# the UI embedded first. E2E_FILES picks the files to run (scripts/screenshot.sh runs e2e/screenshots.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
npx vite build --logLevel warn
cargo build -q -p switchyard-cli
cargo build -q -p switchyard-app --features tauri/custom-protocol
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export SWITCHYARD_HOME="$home" SWITCHYARD_OPEN="$PWD/examples/approval-flow.yaml"
xvfb-run -a -s "-screen 0 1400x900x24" bash -c '
  tauri-driver --port 4444 > target/tauri-driver.log 2>&1 &
  driver=$!
  for i in $(seq 1 50); do (echo > /dev/tcp/127.0.0.1/4444) 2>/dev/null && break; sleep 0.2; done
  node --test --test-concurrency=1 --test-reporter=spec ${E2E_FILES:-e2e/*.test.mjs}; status=$?
  kill $driver
  exit $status'
