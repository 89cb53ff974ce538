#!/usr/bin/env bash
# `npm run e2e`: the real app under Xvfb, driven by tauri-driver + WebKitWebDriver. Works on its own on a fresh
# machine: it installs what the tests need (setup.sh), builds the UI and the app with the UI embedded, finds or
# installs a Python with the `mcp` package (the MCP tests), and starts a local model server (llama.cpp serving
# SmolLM2-135M) that the app finds through SWITCHYARD_LOCAL_URL, as it finds Ollama or llama.cpp on a person's machine.
# E2E_FILES picks the files to run (scripts/screenshot.sh runs e2e/screenshots.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${SWITCHYARD_SETUP_DONE:-}" ] || bash scripts/setup.sh
npx vite build --logLevel warn
# npm test has built the CLI already (with cargo test): building it again with -p would rebuild the engine.
[ -n "${SWITCHYARD_CLI_BUILT:-}" ] || cargo build -q -p switchyard-cli
cargo build -q -p switchyard-app --features tauri/custom-protocol
: "${SWITCHYARD_TEST_MCP_PYTHON:=$(bash scripts/mcp-python.sh)}"
export SWITCHYARD_TEST_MCP_PYTHON
home=$(mktemp -d)
# A free port for each listener (the model, the server, the drivers), so two runs side by side never collide.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
bash scripts/local-model.sh install
port=$(free_port)
# A short context keeps a small model's answers short: a run with no settings has no token limit of its own.
LLAMA_CTX=512 bash scripts/local-model.sh serve "$port" > target/e2e-llama.log 2>&1 &
llama=$!
team=$(mktemp -d)
chmod 755 "$team" # the cluster runs as the postgres user when this runs as root (CI)
trap 'kill "$llama" ${serve:-} ${worker:-} 2>/dev/null || true; bash scripts/postgres.sh stop "$team/pg" >/dev/null 2>&1 || true; rm -rf "$home" "$team"' EXIT
bash scripts/local-model.sh wait "http://127.0.0.1:$port/v1" target/e2e-llama.log
# A server the app connects to (e2e/server.test.mjs): PostgreSQL, `switchyard serve` over two example workflows
# answered by their answers file, and one worker. The app reads the token from SWITCHYARD_TOKEN, as a person's would.
db=$(bash scripts/postgres.sh start "$team/pg" | tail -n 1)
mkdir "$team/workflows"
cp examples/approval-flow.yaml examples/approval-flow.script.yaml "$team/workflows/"
SWITCHYARD_TOKEN=$(target/debug/switchyard --db "$db" token create e2e 2>/dev/null)
server_port=$(free_port)
SWITCHYARD_HOME="$team" target/debug/switchyard --db "$db" serve --workflows "$team/workflows" \
  --answers "$team/workflows/approval-flow.script.yaml" --listen "127.0.0.1:$server_port" > target/e2e-serve.log 2>&1 &
serve=$!
SWITCHYARD_HOME="$team" target/debug/switchyard --db "$db" worker > target/e2e-worker.log 2>&1 &
worker=$!
export SWITCHYARD_TOKEN SWITCHYARD_E2E_SERVER="http://127.0.0.1:$server_port"
# XDG_DATA_HOME: the webview keeps its storage (pane sizes) there; each run starts as a new user.
export SWITCHYARD_HOME="$home" XDG_DATA_HOME="$home/data" SWITCHYARD_OPEN="$PWD/examples/approval-flow.yaml" SWITCHYARD_LOCAL_URL="http://127.0.0.1:$port/v1"
# Each app window gets a tauri-driver (and WebKitWebDriver) of its own, on free ports (e2e/harness.mjs).
: > target/tauri-driver.log
xvfb-run -a -s "-screen 0 1400x900x24" node --test --test-concurrency=1 --test-reporter=spec ${E2E_FILES:-e2e/*.test.mjs}
