"""Issue 18, Show 2: the report of ppocrv4_rec opens in headless Chromium (QtWebEngine, offscreen)
with the network cut off; every section is found and no request leaves the page.

Chromium runs in a child process (scripts/report_browser.py) so that its QApplication is created
after QtWebEngine is imported, as QtWebEngine requires, whatever this pytest process loaded before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core import api

ROOT = Path(__file__).resolve().parents[1]


def browse(page: Path) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    env["QTWEBENGINE_CHROMIUM_FLAGS"] = (env.get("QTWEBENGINE_CHROMIUM_FLAGS", "") + " --no-sandbox").strip()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "report_browser.py"), str(page), "--json"],
                          capture_output=True, text=True, timeout=500, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_interceptor_sees_and_blocks_a_request_off_the_page(tmp_path):
    """The check below can fail: a page with one remote image is caught."""
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><html><body><section id="a"><img src="http://192.0.2.1/x.png">'
                    "</section></body></html>")
    facts = browse(page)
    assert facts["loaded"] and facts["sections"] == ["a"]
    assert facts["blocked"] == ["http://192.0.2.1/x.png"]


@pytest.mark.slow
def test_ppocrv4_rec_report_opens_offline_with_every_section(corpus, tmp_path):
    d = corpus / "ppocrv4_rec"
    out = tmp_path / "report.html"
    assert main(["report", str(d / "model.onnx"), "--data", str(d / "calib.npz"), "--samples", "4",
                 "--eval", str(d / "eval.npz"), "--eval-samples", "4", "-o", str(out)]) == 0
    facts = browse(out)
    assert facts["loaded"]
    assert facts["sections"] == [sid for sid, _ in api.REPORT_SECTIONS]
    assert facts["blocked"] == []
    assert facts["seen"] == [out.resolve().as_uri()]  # the only request: the report file itself
    # every image decoded: SQNR bars, 4 histograms, the graph (no autotune curve given)
    assert facts["images"] == [True] * 6
    assert all(r.startswith(("#", "data:image/svg+xml;base64,")) for r in facts["refs"])
