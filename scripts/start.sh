#!/usr/bin/env bash
# `npm start`: until the desktop app lands, run the alert-triage example offline with its script through the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run -q -p switchyard-cli -- run examples/alert-triage.yaml --script examples/alert-triage.script.yaml "$@"
