#!/usr/bin/env bash
# A Python with `prometheus-client`, whose text-format parser reads the server's /metrics as a scraper would
# (crates/server/tests/api.rs). Installed once into a cached venv under $SWITCHYARD_CACHE (default
# ~/.cache/switchyard); prints its python's path.
set -euo pipefail
cache="${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}"
venv="$cache/prometheus-venv"
version="0.21.1"
check="import importlib.metadata as m; assert m.version('prometheus-client') == '$version'"
if ! "$venv/bin/python" -c "$check" 2>/dev/null; then
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q "prometheus-client==$version" >&2
fi
echo "$venv/bin/python"
