#!/usr/bin/env bash
# README screenshots of the real window on a virtual X server (Debian: xvfb libxcb-icccm4 libxcb-keysyms1).
# PYTHON=... picks the interpreter (default .venv/bin/python); arguments: see scripts/screenshot.py.
set -euo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM=xcb
exec xvfb-run -a -s "-screen 0 1600x1000x24" "${PYTHON:-.venv/bin/python}" scripts/screenshot.py "$@"
