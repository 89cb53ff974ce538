#!/usr/bin/env bash
# `npm test`: every check CI runs. Formatting and lints first (fast failures), then the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings

step "cargo test"
cargo test --workspace -q 2>&1 | tee target/test-output.txt

step "JSON Schema is current"
cargo run -q -p switchyard-cli -- schema | diff -u schema/workflow.schema.json - \
  || { echo "schema/workflow.schema.json is stale: regenerate it with 'cargo run -p switchyard-cli -- schema'"; exit 1; }

passed=$(grep -Eo '[0-9]+ passed' target/test-output.txt | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' target/test-output.txt | awk '{s+=$1} END {print s+0}')
echo
echo "$passed passed, $failed failed"
