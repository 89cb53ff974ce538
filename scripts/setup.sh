#!/usr/bin/env bash
# Installs what the app, its tests and CI need, skipping whatever is already present (safe to run again).
set -euo pipefail
cd "$(dirname "$0")/.."
have() { command -v "$1" >/dev/null 2>&1; }
sudo_if() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# System packages: WebKitGTK and friends to build and run the Tauri app; Xvfb and WebKitWebDriver for end-to-end tests;
# PostgreSQL for the run store's tests on it (each starts a throwaway cluster of its own, scripts/postgres.sh).
packages=(build-essential pkg-config libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev
  libssl-dev libxdo-dev xvfb xauth webkit2gtk-driver python3-venv postgresql)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if have node && have npm; then :; else missing+=(nodejs npm); fi
if ((${#missing[@]})); then
  echo "installing system packages: ${missing[*]}"
  sudo_if apt-get update -qq
  DEBIAN_FRONTEND=noninteractive sudo_if apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages, from the committed lock (npm ci refuses locks without other platforms' optional binaries).
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund --loglevel=error
fi

# tauri-driver, the WebDriver bridge for end-to-end tests.
if ! have tauri-driver; then
  cargo install tauri-driver --version 2.1.0 --locked --quiet
fi
