"""Packaging and desktop integration: desktop entry, MIME definitions, icons, entry points,
version, the XDG installer script and the ``--self-test`` used to smoke-test bundles."""

from __future__ import annotations

import configparser
import importlib.metadata as md
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import workbench

ROOT = Path(__file__).resolve().parent.parent
RES = ROOT / "workbench" / "resources"
ICON_SIZES = (16, 32, 48, 64, 128, 256)
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"
MIME_GLOBS = {"application/x-onnx": "*.onnx", "application/x-workbench-project": "*.wbproj"}


def _desktop_entry_at(path: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive in the desktop-entry spec
    assert parser.read(path, encoding="utf-8") == [str(path)], f"{path} missing"
    return parser["Desktop Entry"]


def _desktop_entry() -> configparser.SectionProxy:
    return _desktop_entry_at(RES / "workbench.desktop")


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG signature + IHDR chunk (PNG spec, section 11.2.2)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_desktop_entry_has_required_keys():
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Workbench"
    assert entry["Exec"] == "workbench %f"
    assert entry["Icon"] == "workbench"
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";")
    mime_types = entry["MimeType"]
    assert mime_types.endswith(";")
    assert set(filter(None, mime_types.split(";"))) == set(MIME_GLOBS)


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-validate not found: apt-get install desktop-file-utils")
def test_desktop_entry_validates():
    proc = subprocess.run(["desktop-file-validate", str(RES / "workbench.desktop")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mime_xml_declares_both_globs():
    root = ET.parse(RES / "mime" / "workbench.xml").getroot()
    assert root.tag == f"{MIME_NS}mime-info"
    found = {mt.get("type"): [g.get("pattern") for g in mt.iter(f"{MIME_NS}glob")]
             for mt in root.iter(f"{MIME_NS}mime-type")}
    assert found == {t: [g] for t, g in MIME_GLOBS.items()}
    assert all(mt.find(f"{MIME_NS}comment") is not None for mt in root.iter(f"{MIME_NS}mime-type"))


@pytest.mark.parametrize("size", ICON_SIZES)
def test_icon_png_has_its_size(size):
    path = RES / "icons" / f"workbench-{size}.png"
    assert path.is_file(), f"{path} missing: run packaging/render_icons.py"
    assert _png_size(path) == (size, size)


def test_icon_svg_parses_and_is_square():
    root = ET.parse(RES / "icons" / "workbench.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == "0 0 256 256"


@pytest.mark.qt
def test_icon_png_renders_with_transparent_corners():
    from PySide6 import QtGui as qtgui
    image = qtgui.QImage(str(RES / "icons" / "workbench-256.png"))
    assert (image.width(), image.height()) == (256, 256) and image.hasAlphaChannel()
    assert image.pixelColor(0, 0).alpha() == 0           # outside the rounded square
    assert image.pixelColor(128, 128).alpha() == 255     # the middle node


def test_cli_version_matches_package_version():
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", "--version"],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    assert proc.stdout.strip() == f"workbench {workbench.__version__}"


def test_installed_distribution_entry_points_and_version():
    dist = md.distribution("onnx-quant-workbench")
    assert dist.version == workbench.__version__
    eps = {(ep.group, ep.name): ep.value for ep in dist.entry_points}
    assert eps[("console_scripts", "workbench-cli")] == "workbench.cli:main"
    assert eps[("gui_scripts", "workbench")] == "workbench.qt.main:main"
    assert callable(md.entry_points(group="console_scripts")["workbench-cli"].load())
    assert "package" in (dist.metadata.get_all("Provides-Extra") or [])


def test_gui_entry_point_module_exists():
    if importlib.util.find_spec("workbench.qt.main") is None:
        pytest.fail("workbench.qt.main is missing: the `workbench` gui script and `python -m workbench` "
                    "cannot start")


@pytest.mark.parametrize("script", ["build.sh", "smoke.sh", "install_desktop.sh"])
def test_shell_scripts_parse(script):
    subprocess.run(["bash", "-n", str(ROOT / "packaging" / script)], check=True)


def test_pyinstaller_spec_compiles():
    source = (ROOT / "packaging" / "workbench.spec").read_text(encoding="utf-8")
    compile(source, "workbench.spec", "exec")


def test_install_desktop_registers_and_uninstalls(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    script = str(ROOT / "packaging" / "install_desktop.sh")
    subprocess.run(["bash", script, "--exec", "/opt/wb/workbench"], env=env, check=True,
                   capture_output=True)
    data = tmp_path / "data"
    installed = _desktop_entry_at(data / "applications" / "workbench.desktop")
    assert installed["Exec"] == "/opt/wb/workbench %f" and installed["TryExec"] == "/opt/wb/workbench"
    assert (data / "mime" / "packages" / "workbench.xml").is_file()
    for size in ICON_SIZES:
        assert _png_size(data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "workbench.png") == (size, size)
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / "workbench.svg").is_file()
    if shutil.which("update-mime-database"):
        globs = (data / "mime" / "globs2").read_text(encoding="utf-8")
        assert "application/x-onnx:*.onnx" in globs and "application/x-workbench-project:*.wbproj" in globs
    if shutil.which("update-desktop-database"):
        cache = (data / "applications" / "mimeinfo.cache").read_text(encoding="utf-8")
        assert "application/x-onnx=workbench.desktop;" in cache

    subprocess.run(["bash", script, "--uninstall"], env=env, check=True, capture_output=True)
    left = [p for p in data.rglob("*") if p.is_file() and p.name.startswith(("workbench", "application-x-"))]
    assert left == []
    if shutil.which("update-mime-database"):
        assert "x-onnx" not in (data / "mime" / "globs2").read_text(encoding="utf-8")


def test_install_desktop_from_a_bundle_registers_the_bundle(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "_internal" / "workbench").mkdir(parents=True)
    (bundle / "_internal" / "workbench" / "resources").symlink_to(RES)
    (bundle / "workbench").write_text("#!/bin/sh\n")
    (bundle / "workbench").chmod(0o755)
    shutil.copy(ROOT / "packaging" / "install_desktop.sh", bundle / "install_desktop.sh")
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    subprocess.run(["bash", str(bundle / "install_desktop.sh")], env=env, check=True, capture_output=True)
    installed = _desktop_entry_at(tmp_path / "data" / "applications" / "workbench.desktop")
    assert installed["Exec"] == f"{bundle / 'workbench'} %f"


@pytest.mark.slow
def test_self_test_passes_offscreen():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "workbench.qt.selftest"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"workbench {workbench.__version__} self-test OK: digits_cnn cpu-u8s8 accuracy")
    accuracy = float(proc.stdout.split("accuracy ")[1].split()[0])
    assert accuracy >= 0.98


@pytest.mark.slow
def test_self_test_reports_failure(monkeypatch, capsys):
    from workbench.qt import selftest

    monkeypatch.setattr(selftest, "MIN_ACCURACY", 1.01)  # unreachable: must fail with a message
    monkeypatch.setattr(selftest, "_exercise_main_window", lambda *a: "window skipped")  # covered above
    assert selftest.run_self_test([]) == 1
    err = capsys.readouterr().err
    assert "self-test FAILED: quantized example accuracy" in err
    assert selftest.run_self_test(["--bogus"]) == 1


@pytest.mark.qt
def test_self_test_window_reports_error_dialog_instead_of_hanging(qapp, tmp_path):
    from workbench.qt import selftest

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(selftest.SelfTestError, match="showed an error.*bad.onnx"):
        selftest._exercise_main_window(qapp, bad, tmp_path / "settings")
