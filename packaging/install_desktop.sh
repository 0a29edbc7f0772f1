#!/usr/bin/env bash
# Register Workbench with the desktop for the current user (XDG dirs, no root):
#   applications/workbench.desktop, icons/hicolor/<size>/apps/workbench.png (+ scalable SVG and the
#   project file's MIME icon), mime/packages/workbench.xml; then refreshes the desktop, MIME and
#   icon caches and makes Workbench the default for *.onnx and *.wbproj when the tools exist.
#
#   bash packaging/install_desktop.sh [--exec COMMAND]    # COMMAND defaults to `workbench`
#   dist/workbench/install_desktop.sh                     # from a bundle: registers the bundle
#   bash packaging/install_desktop.sh --uninstall
#
# --exec: what the menu entry runs, e.g. the absolute path of a venv's script when `workbench` is not
# on PATH. Inside a bundle (dist/workbench/install_desktop.sh) it defaults to that bundle's executable.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec_cmd=workbench
if [ -x "$HERE/workbench" ] && [ -d "$HERE/_internal/workbench/resources" ]; then
    # copied into a PyInstaller bundle by build.sh: register that bundle
    RES="${WORKBENCH_RESOURCES:-$HERE/_internal/workbench/resources}"
    exec_cmd="$HERE/workbench"
else
    RES="${WORKBENCH_RESOURCES:-$HERE/../workbench/resources}"
fi
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
SIZES="16 32 48 64 128 256"
MIME_TYPES="application/x-onnx application/x-workbench-project"
APP_ID="workbench"

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

refresh() {
    if command -v update-mime-database >/dev/null; then update-mime-database "$DATA/mime"; fi
    if command -v update-desktop-database >/dev/null; then update-desktop-database -q "$DATA/applications"; fi
    if command -v gtk-update-icon-cache >/dev/null && [ -f "$DATA/icons/hicolor/index.theme" ]; then
        gtk-update-icon-cache -q -t -f "$DATA/icons/hicolor" || true
    fi
}

icon_targets() {  # prints "source destination" pairs
    for s in $SIZES; do
        echo "$RES/icons/$APP_ID-$s.png $DATA/icons/hicolor/${s}x${s}/apps/$APP_ID.png"
        echo "$RES/icons/$APP_ID-$s.png $DATA/icons/hicolor/${s}x${s}/mimetypes/application-x-workbench-project.png"
    done
    echo "$RES/icons/$APP_ID.svg $DATA/icons/hicolor/scalable/apps/$APP_ID.svg"
}

install_files() {
    local exec_cmd="$1"
    for f in "$RES/$APP_ID.desktop" "$RES/mime/$APP_ID.xml" "$RES/icons/$APP_ID.svg"; do
        [ -f "$f" ] || { echo "install_desktop.sh: $f is missing; run from a Workbench checkout" >&2; exit 1; }
    done
    mkdir -p "$DATA/applications" "$DATA/mime/packages"
    # Exec/TryExec point at the chosen command; %f (one file) stays.
    sed -e "s|^Exec=workbench |Exec=$exec_cmd |" -e "s|^TryExec=workbench$|TryExec=$exec_cmd|" \
        "$RES/$APP_ID.desktop" > "$DATA/applications/$APP_ID.desktop"
    install -m 644 "$RES/mime/$APP_ID.xml" "$DATA/mime/packages/$APP_ID.xml"
    icon_targets | while read -r src dst; do install -D -m 644 "$src" "$dst"; done
    refresh
    if command -v xdg-mime >/dev/null; then
        # shellcheck disable=SC2086
        xdg-mime default "$APP_ID.desktop" $MIME_TYPES || echo "install_desktop.sh: xdg-mime default failed" >&2
    fi
    echo "install_desktop.sh: installed $APP_ID.desktop, MIME types ($MIME_TYPES) and icons under $DATA"
}

uninstall_files() {
    rm -f "$DATA/applications/$APP_ID.desktop" "$DATA/mime/packages/$APP_ID.xml"
    icon_targets | while read -r _ dst; do rm -f "$dst"; done
    if [ -d "$DATA/mime/packages" ]; then refresh; fi
    echo "install_desktop.sh: removed Workbench's desktop entry, MIME types and icons from $DATA"
}

mode=install
while [ $# -gt 0 ]; do
    case "$1" in
        --uninstall) mode=uninstall ;;
        --exec) exec_cmd="${2:?--exec needs a command}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install_desktop.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$exec_cmd" in *"|"*|*" "*) echo "install_desktop.sh: --exec must be one path without spaces or |" >&2; exit 2 ;; esac

if [ "$mode" = uninstall ]; then uninstall_files; else install_files "$exec_cmd"; fi
