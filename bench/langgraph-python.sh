#!/usr/bin/env bash
# A Python with LangGraph (pinned), for the peer figures `npm run bench` prints beside ours
# (the scripts in ../shared/bench-anchors/). Installed once into a cached venv under $SWITCHYARD_CACHE
# (default ~/.cache/switchyard); prints its python's path, or fails (the bench then prints "not measured").
set -euo pipefail
cache="${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}"
venv="$cache/langgraph-venv"
version="1.2.22"
if ! "$venv/bin/python" -c "import langgraph.checkpoint.sqlite.aio, importlib.metadata as m; assert m.version('langgraph') == '$version'" 2>/dev/null; then
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q "langgraph==$version" "langgraph-checkpoint==4.3.2" "langchain-core==1.7.2" \
    "langgraph-checkpoint-sqlite==3.1.2" "aiosqlite==0.22.1" >&2
fi
echo "$venv/bin/python"
