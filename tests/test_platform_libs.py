"""The app says which system libraries Qt's X11 plugin is missing, in one line, instead of Qt's abort."""

from __future__ import annotations

import shutil
import subprocess

from workbench.qt import main as app_main
from workbench.qt import platform_libs


def _build(tmp_path, name: str, source: str, *link: str) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    assert gcc, "a C compiler (gcc) is part of this machine kind"
    (tmp_path / f"{name}.c").write_text(source)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(tmp_path / f"lib{name}.so"), str(tmp_path / f"{name}.c"),
                    *link], check=True)


def test_ldd_finds_a_library_that_was_removed(tmp_path):
    """A real shared object linked against a library that is then deleted: ldd says 'not found'."""
    _build(tmp_path, "wbgone", "int wb_gone(void) { return 1; }\n", "-Wl,-soname,libwbgone.so.0")
    (tmp_path / "libwbgone.so").rename(tmp_path / "libwbgone.so.0")
    (tmp_path / "libwbgone.so").symlink_to(tmp_path / "libwbgone.so.0")
    _build(tmp_path, "wbplugin", "int wb_gone(void);\nint wb_plugin(void) { return wb_gone(); }\n",
           f"-L{tmp_path}", "-lwbgone")
    plugin = tmp_path / "libwbplugin.so"
    (tmp_path / "libwbgone.so.0").unlink()
    assert platform_libs.missing_xcb_libraries(plugin) == ["libwbgone.so.0"]


def test_not_found_reads_ldd_lines():
    text = ("\tlinux-vdso.so.1 (0x00007ffd)\n"
            "\tlibxcb-cursor.so.0 => not found\n"
            "\tlibQt6Gui.so.6 => /x/libQt6Gui.so.6 (0x7f)\n"
            "\tlibxcb-icccm.so.4 => not found\n"
            "\tlibxcb-cursor.so.0 => not found\n")
    assert platform_libs.not_found(text) == ["libxcb-cursor.so.0", "libxcb-icccm.so.4"]


def test_debian_package_names():
    assert platform_libs.debian_package("libxcb-cursor.so.0") == "libxcb-cursor0"
    assert platform_libs.debian_package("libxcb-keysyms.so.1") == "libxcb-keysyms1"
    assert platform_libs.debian_package("libxkbcommon-x11.so.0") == "libxkbcommon-x11-0"
    assert platform_libs.debian_package("weird") == "weird"


def test_uses_xcb_only_on_an_x_display():
    assert platform_libs.uses_xcb({"DISPLAY": ":0"}, "linux")
    assert platform_libs.uses_xcb({"DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb"}, "linux")
    assert not platform_libs.uses_xcb({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, "linux")
    assert not platform_libs.uses_xcb({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert not platform_libs.uses_xcb({}, "linux")
    assert not platform_libs.uses_xcb({"DISPLAY": ":0"}, "darwin")


def test_app_refuses_in_one_line_naming_the_packages(monkeypatch, capsys):
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(app_main.sys, "platform", "linux")
    monkeypatch.setattr(app_main, "missing_xcb_libraries", lambda: ["libxcb-cursor.so.0", "libxcb-icccm.so.4"])
    assert app_main.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "libxcb-cursor.so.0, libxcb-icccm.so.4" in err
    assert "apt-get install libxcb-cursor0 libxcb-icccm4" in err
