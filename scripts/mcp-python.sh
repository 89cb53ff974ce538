#!/usr/bin/env bash
# A Python with the `mcp` package, for the tests against real MCP servers (crates/engine/tests/mcp/server.py).
# Installed once into a cached venv under $SWITCHYARD_CACHE (default ~/.cache/switchyard); prints its python's path.
set -euo pipefail
cache="${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}"
venv="$cache/mcp-venv"
version="1.30.0"
if ! "$venv/bin/python" -c "import mcp, importlib.metadata as m; assert m.version('mcp') == '$version'" 2>/dev/null; then
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q "mcp==$version" >&2
fi
echo "$venv/bin/python"
