#!/usr/bin/env bash
# Engine benchmark: the marginal cost per step (chain, fan-out, loop; log off and on) beside a bare tokio floor and
# LangGraph, as a table and then JSON lines. See crates/engine/benches/engine.rs. `npm run bench -- --quick`: 1k and
# 10k only, 3 runs each.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q --workspace --bench engine -- "$@"
