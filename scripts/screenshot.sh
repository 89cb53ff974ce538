#!/usr/bin/env bash
# Regenerates docs/screenshot.png: the real app mid-run (approval-flow paused at its approval), taken by the
# end-to-end run.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs
SCREENSHOT="$PWD/docs/screenshot.png" bash scripts/e2e.sh
echo "wrote docs/screenshot.png"
