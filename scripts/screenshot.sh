#!/usr/bin/env bash
# Regenerates docs/screenshots/: the main views of the real app (canvas, edge inspector, run, approval, menus,
# settings, an imported SWEny file, the dark theme), taken by driving it as a person does under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/screenshots
SCREENSHOTS="$PWD/docs/screenshots" E2E_FILES=e2e/screenshots.mjs bash scripts/e2e.sh
ls -1 docs/screenshots
