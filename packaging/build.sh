#!/usr/bin/env bash
# Build a one-folder bundle of Workbench with PyInstaller: dist/workbench/{workbench,workbench-cli}.
#
#   bash packaging/build.sh            # build venv in build/venv (created on first run), bundle in dist/
#   WORKBENCH_BUILD_VENV=.venv bash packaging/build.sh   # use an existing venv instead
#   PYTHON=python3.12 bash packaging/build.sh            # interpreter for a new venv
#
# The project is installed into the venv as a regular (non-editable) package with the `package`
# extra (the app's dependencies plus pyinstaller), so the bundle holds exactly what `pip install .`
# installs, package data included. Afterwards run `bash packaging/smoke.sh`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WORKBENCH_BUILD_VENV:-$ROOT/build/venv}"
PYTHON="${PYTHON:-python3}"
cd "$ROOT"
start=$(date +%s)

if [ ! -x "$VENV/bin/python" ]; then
    echo "build.sh: creating venv $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
echo "build.sh: installing .[package] into $VENV"
"$VENV/bin/python" -m pip install --quiet ".[package]"
# pip may keep an older build of the same version: always install the current sources.
"$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall .

echo "build.sh: running PyInstaller"
"$VENV/bin/python" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" \
    "$ROOT/packaging/workbench.spec"

# `dist/workbench/install_desktop.sh` registers this bundle (menu entry, icons, MIME types).
install -m 755 "$ROOT/packaging/install_desktop.sh" "$ROOT/dist/workbench/install_desktop.sh"

end=$(date +%s)
size=$(du -sh "$ROOT/dist/workbench" | cut -f1)
echo "build.sh: dist/workbench built in $((end - start)) s, size $size"
