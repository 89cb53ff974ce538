#!/usr/bin/env bash
# Regenerates docs/screenshots/: the main views of the real app (canvas, edge inspector, run, approval, menus,
# settings, an imported SWEny file, the dark theme), taken by driving it as a person does under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/screenshots
# canvas.test.mjs takes the pictures of code consent, MCP settings and a tool approval as it tests them.
SCREENSHOTS="$PWD/docs/screenshots" E2E_FILES="e2e/screenshots.mjs e2e/canvas.test.mjs" bash scripts/e2e.sh
ls -1 docs/screenshots
