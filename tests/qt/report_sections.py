"""One section of the HTML report File > Export Report writes: exported, then read back."""

from __future__ import annotations

from pathlib import Path

from test_app_flow import run_job


def report_section(qtbot, win, path: Path, section: str) -> str:
    """Export ``win``'s report to ``path`` (a job; checked to succeed) and return the HTML of its
    ``<section id="SECTION"`` up to its closing tag."""
    state, res = run_job(qtbot, win, lambda: win.export_report_to(path), timeout=300_000)
    assert state == "succeeded", res
    return path.read_text(encoding="utf-8").split(f'<section id="{section}"', 1)[1].split("</section>", 1)[0]
