#!/usr/bin/env bash
# Engine benchmark: one JSON line per shape, then a summary line. See crates/engine/benches/engine.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p switchyard-engine --bench engine
