#!/usr/bin/env bash
# `npm test`: every check CI runs. Formatting and lints first (fast failures), then the whole test suite, then the
# provider tests and the examples against a real local model server.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
out=target/test-output.txt
: > "$out"

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings

step "cargo test"
cargo test --workspace -q 2>&1 | tee -a "$out"

step "JSON Schema is current"
cargo run -q -p switchyard-cli -- schema | diff -u schema/workflow.schema.json - \
  || { echo "schema/workflow.schema.json is stale: regenerate it with 'cargo run -p switchyard-cli -- schema'"; exit 1; }

step "local model server (llama.cpp serving SmolLM2-135M)"
bash scripts/local-model.sh install
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bash scripts/local-model.sh serve "$port" > target/llama-server.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
url="http://127.0.0.1:$port/v1"
python3 - "$url" <<'PY'
import sys, time, urllib.request
deadline = time.time() + 120
while True:
    try:
        urllib.request.urlopen(sys.argv[1] + "/models", timeout=2).read()
        break
    except Exception as e:
        if time.time() > deadline:
            sys.exit(f"the local model server did not answer within 120 s: {e} (see target/llama-server.log)")
        time.sleep(0.5)
PY

step "providers against the real local model"
SWITCHYARD_TEST_LLM_URL="$url" cargo test -q -p switchyard-engine --test local_model -- --ignored 2>&1 | tee -a "$out"

step "examples against the real local model (switchyard run --model local/smollm2-135m)"
SWITCHYARD_TEST_LLM_URL="$url" bash scripts/local-examples.sh | tee -a "$out"

passed=$(grep -Eo '[0-9]+ passed' "$out" | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$out" | awk '{s+=$1} END {print s+0}')
echo
echo "$passed passed, $failed failed"
