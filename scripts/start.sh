#!/usr/bin/env bash
# `npm start`: installs what is missing, builds the UI, and opens the desktop app with the alert-triage example,
# which runs offline with its script file (no account needed). Pass a workflow path to open that instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npx vite build --logLevel warn
cargo build -q -p switchyard-app --features tauri/custom-protocol
exec target/debug/switchyard-app "$@"
