#!/usr/bin/env bash
# README screenshot of the real window on a virtual X server (Debian: xvfb libxcb-icccm4 libxcb-keysyms1).
set -euo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM=xcb
exec xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshot.py "$@"
