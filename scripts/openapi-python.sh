#!/usr/bin/env bash
# A Python with `openapi-spec-validator`, for the test that validates the server's /openapi.json
# (crates/server/tests/api.rs). Installed once into a cached venv under $SWITCHYARD_CACHE (default
# ~/.cache/switchyard); prints its python's path.
set -euo pipefail
cache="${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}"
venv="$cache/openapi-venv"
version="0.9.0"
check="import importlib.metadata as m; assert m.version('openapi-spec-validator') == '$version'"
if ! "$venv/bin/python" -c "$check" 2>/dev/null; then
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q "openapi-spec-validator==$version" >&2
fi
echo "$venv/bin/python"
