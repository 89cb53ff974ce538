#!/usr/bin/env bash
# `npm test`: every check CI runs. Fast checks first (formatting, lints, types), then the Rust and UI test suites,
# the provider tests and examples against a real local model, and the real app end to end under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p target
out=target/test-output.txt
: > "$out"
# What the tree holds now (changes and untracked files, with their contents' hash): a test must leave it as it was.
tree_state() { git status --porcelain=v1 --untracked-files=all; git diff HEAD --binary | sha1sum; }
tree_before=$(tree_state)

# Each step says when it began (seconds since the start), so a slow step shows in CI's log.
step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

step "build the UI (the app crate embeds dist/)"
npx vite build --logLevel warn

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings

step "TypeScript (tsc --noEmit)"
npx tsc --noEmit -p ui

step "ESLint"
npx eslint . --max-warnings 0

step "cargo test"
cargo test --workspace -q 2>&1 | tee -a "$out"

step "MCP tools against real servers, and switchyard mcp serve against a real client (the Python mcp package)"
mcp_python=$(bash scripts/mcp-python.sh)
# `--workspace --test NAME`, not `-p CRATE`: the same features as `cargo test` above, so nothing is built again.
SWITCHYARD_TEST_MCP_PYTHON="$mcp_python" cargo test -q --workspace --test mcp --test cli --test journal --test mcp_serve --test mcp_http -- --ignored 2>&1 | tee -a "$out"

step "generated files are current (JSON Schema, TypeScript bindings)"
# The binary `cargo test` built for the CLI's tests.
target/debug/switchyard schema | diff -u schema/workflow.schema.json - \
  || { echo "schema/workflow.schema.json is stale: regenerate it with 'cargo run -p switchyard-cli -- schema'"; exit 1; }
git diff --exit-code -- ui/src/bindings.ts ui/src/generated/node-types.json ui/src/generated/commands.json \
  || { echo "ui/src/bindings.ts or ui/src/generated/*.json is stale: 'cargo test -p switchyard-app' regenerated it; commit it"; exit 1; }

step "UI unit tests (vitest)"
npx vitest run 2>&1 | tee -a "$out"

step "local model server (llama.cpp serving SmolLM2-135M)"
bash scripts/local-model.sh install
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bash scripts/local-model.sh serve "$port" > target/llama-server.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
url="http://127.0.0.1:$port/v1"
bash scripts/local-model.sh wait "$url" target/llama-server.log

step "providers against the real local model"
SWITCHYARD_TEST_LLM_URL="$url" SWITCHYARD_TEST_MCP_PYTHON="$mcp_python" cargo test -q --workspace --test local_model -- --ignored 2>&1 | tee -a "$out"

step "examples against the real local model (switchyard run --model local/smollm2-135m)"
SWITCHYARD_TEST_LLM_URL="$url" bash scripts/local-examples.sh | tee -a "$out"
kill "$server" 2>/dev/null || true

step "the server, acceptance: serve and four workers on PostgreSQL, 1,000 webhook runs under faults"
python3 scripts/server-acceptance.py 2>&1 | tee -a "$out"

step "the canvas in a browser: serve, a worker and headless Chromium (sign in, follow live, approve, Run)"
node --test --test-reporter=spec e2e/browser/ 2>&1 | tee target/browser-output.txt
grep -Eo '^ℹ (pass|fail) [0-9]+' target/browser-output.txt | awk '{print $3, ($2 == "pass" ? "passed" : "failed")}' >> "$out"

step "the desktop app, end to end (tauri-driver + WebKitWebDriver under Xvfb)"
SWITCHYARD_SETUP_DONE=1 SWITCHYARD_CLI_BUILT=1 SWITCHYARD_TEST_MCP_PYTHON="$mcp_python" bash scripts/e2e.sh 2>&1 | tee target/e2e-output.txt
grep -Eo '^ℹ (pass|fail) [0-9]+' target/e2e-output.txt | awk '{print $3, ($2 == "pass" ? "passed" : "failed")}' >> "$out"

step "the tests left the tree as it was (git status)"
if [ "$(tree_state)" != "$tree_before" ]; then
  echo "a test wrote into the tree: it must write under target/ or a temporary folder"
  diff <(echo "$tree_before") <(tree_state) || true
  echo "1 failed" >> "$out"
else
  echo "1 passed" >> "$out"
fi

counted() { grep -v 'Test Files' "$out" | grep -Eo "[0-9]+ $1" | awk '{s+=$1} END {print s+0}'; }
passed=$(counted passed)
failed=$(counted failed)
echo
echo "$passed passed, $failed failed, in $SECONDS s"
[ "$failed" -eq 0 ]
