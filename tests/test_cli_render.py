"""`workbench-cli render`: the canvas drawn headless (a child process, offscreen Qt) into PNG / SVG."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE
from PIL import Image

from workbench.cli import main
from workbench.core import api

pytest.importorskip("PySide6")

from workbench.qt.canvas import colors  # noqa: E402

UINT8_FILL = 'fill="#ffd54f"'  # colors._DTYPE_COLORS["uint8"]: cpu-u8s8 activations
UINT8_RGB, NO_VALUE_RGB = (0xFF, 0xD5, 0x4F), (0xD9, 0xD9, 0xD9)  # the legend's swatches: uint8, not assigned
OUTLINE_RGB = (0x76, 0x76, 0x76)  # the swatches' outline


def svg_texts(svg: str) -> list[str]:
    """The text of every <text> element of the SVG source ``svg``, whitespace runs as one space."""
    return [" ".join(t.split()) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def _outlined_box(pixels: np.ndarray, fill: tuple, outline: tuple) -> tuple[int, int]:
    """(width, height) of the first box in ``pixels`` (H x W x 3) whose every pixel is ``fill`` and whose
    1 px ring is all ``outline``; (0, 0) if there is none."""
    is_fill = (pixels == fill).all(axis=2)
    is_line = (pixels == outline).all(axis=2)
    for y, x in zip(*np.nonzero(is_fill), strict=True):
        if y == 0 or x == 0 or not (is_line[y - 1, x] and is_line[y, x - 1]):
            continue  # not a top-left corner
        w = int(np.argmin(np.append(is_fill[y, x:], False)))
        h = int(np.argmin(np.append(is_fill[y:, x], False)))
        inside = is_fill[y : y + h, x : x + w].all()
        ring = (
            is_line[y - 1, x - 1 : x + w + 1].all()
            and is_line[y + h, x - 1 : x + w + 1].all()
            and is_line[y - 1 : y + h + 1, x - 1].all()
            and is_line[y - 1 : y + h + 1, x + w].all()
        )
        if inside and ring:
            return w, h
    return 0, 0


def _png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.mark.slow
def test_render_png_and_dtype_svg(corpus, tmp_path, capsys):
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    png = tmp_path / "graph.png"
    assert main(["render", str(model), "-o", str(png), "--max-side", "900"]) == 0
    w, h = _png_size(png)
    assert max(w, h) <= 900 and min(w, h) > 100 and f"({w}x{h} px)" in capsys.readouterr().out
    svg_op, svg_dtype = tmp_path / "op.svg", tmp_path / "dtype.svg"
    assert main(["render", str(model), "-o", str(svg_op)]) == 0
    assert main(["render", str(model), "-o", str(svg_dtype), "--colour", "dtype", "--expand", "0"]) == 0
    op_text, dtype_text = svg_op.read_text(encoding="utf-8"), svg_dtype.read_text(encoding="utf-8")
    assert "Conv" in op_text and UINT8_FILL not in op_text  # op colours: no dtype fill
    assert UINT8_FILL in dtype_text  # the collapsed group is mostly uint8: drawn in the uint8 colour
    assert "quantized" in dtype_text  # its aggregate text ("NN% quantized")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dtype.svg", "graph.png", "op.svg"]


def test_render_refuses_bad_requests_in_one_line(corpus, tmp_path, capsys):
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    assert main(["render", str(model), "-o", str(tmp_path / "g.jpg")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and ".png or .svg" in err
    assert main(["render", str(model), "-o", str(tmp_path / "g.png"), "--colour", "sqnr"]) == 2
    assert "give --data" in capsys.readouterr().err
    assert main(["render", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "g.png")]) == 2
    assert "missing.onnx" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.slow
def test_render_draws_the_colour_legend_into_png_and_svg(corpus, tmp_path):
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    png, svg = tmp_path / "dtype.png", tmp_path / "dtype.svg"
    assert main(["render", str(model), "-o", str(png), "--colour", "dtype"]) == 0
    assert main(["render", str(model), "-o", str(svg), "--colour", "dtype"]) == 0
    pixels = np.asarray(Image.open(png).convert("RGB"))
    # the legend sits in the top-left corner (8 px in); "Fit graph" keeps the graph out of it
    legend = pixels[:90, :320]
    rest = pixels[90:].reshape(-1, 3)
    for rgb in (UINT8_RGB, NO_VALUE_RGB):
        # a swatch: a box of the colour inside a 1 px outline of OUTLINE_RGB, at least 12 x 8 px in all
        # (workbench/qt/canvas/swatch.py); the near-white 'not assigned' grey had no edge before it
        w, h = _outlined_box(legend, rgb, OUTLINE_RGB)
        assert w >= 10 and h >= 6, (rgb, w, h)
    assert (rest == UINT8_RGB).all(axis=1).sum() > 10 * 150  # the uint8 nodes below it
    texts = svg_texts(svg.read_text(encoding="utf-8"))
    texts = [
        t.removeprefix("\u25be ") for t in texts
    ]  # the open legend's title starts with its collapse arrow
    for label in ("Colour: dtype (recipe)", "uint8", "not assigned"):  # the title on one line, not wrapped
        assert label in texts, label


def _example_and_export(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The bundled digits CNN, its calibration data and our cpu-u8s8 export of it (8 samples) in ``tmp_path``."""
    float_path, calib, export = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz", tmp_path / "q.onnx"
    api.export(api.quantize(api.open_model(float_path), api.make_recipe("cpu-u8s8"), data=str(calib), samples=8),
               export)
    return float_path, calib, export


def _render_compare(first: Path, second: Path, calib: Path, out: Path, *extra: str) -> int:
    """``workbench-cli render FIRST --compare SECOND --data CALIB --samples 8 [EXTRA...] -o OUT``; its exit code."""
    return main(["render", str(first), "--compare", str(second), "--data", str(calib), "--samples", "8", *extra,
                 "-o", str(out)])


@pytest.mark.slow
def test_render_compare_draws_both_panes(tmp_path, capsys):
    """``render FLOAT --compare QUANTIZED``: the float graph and our export of it side by side."""
    float_path, calib, export = _example_and_export(tmp_path)
    svg = tmp_path / "panes.svg"
    assert _render_compare(float_path, export, calib, svg) == 0
    text = svg.read_text(encoding="utf-8")
    assert ">Float: digits_cnn.onnx<" in text and ">Quantized: q.onnx<" in text
    convs = sum(n.op_type == "Conv" for n in onnx.load(str(float_path)).graph.node)
    assert text.count(">Conv<") == 2 * 2 * convs  # op type and short name, in each pane
    assert f'fill="{colors.op_color("Conv").name()}"' in text  # the float pane in op colours
    # one u8 edge badge per Q/DQ pair between two drawn nodes (read from the export with onnx)
    q = onnx.load(str(export))
    producer = {o: n for n in q.graph.node for o in n.output}
    outputs = {o.name for o in q.graph.output}
    between = [
        n
        for n in q.graph.node
        if n.op_type == "QuantizeLinear"
        and n.input[0] in producer
        and not any(
            d.output[0] in outputs
            for d in q.graph.node
            if d.op_type == "DequantizeLinear" and d.input[0] == n.output[0]
        )
    ]
    assert text.count(">u8<") == len(between) == 6
    # the logits (the Gemm's graph output) stay float: no output badge
    assert ">out:u8<" not in text and sorted(p.name for p in tmp_path.iterdir()) == ["panes.svg", "q.onnx"]
    # given the other way round (the quantized file first): drawn in the order FLOAT QUANTIZED, with a note
    capsys.readouterr()
    swapped = tmp_path / "swapped.svg"
    assert _render_compare(export, float_path, calib, swapped) == 0
    notes = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith(("note:", "warning:", "error:"))
    ]
    assert notes == [
        f"note: {export} is quantized and {float_path} is not: compared in the order FLOAT QUANTIZED, as "
        f"`workbench-cli render {float_path} --compare {export}`"
    ]
    assert (
        swapped.read_text(encoding="utf-8").replace("<title>swapped</title>", "<title>panes</title>") == text
    )


KEY_ENTRIES = [
    "struck grey: float op folded / fused (note: the node it went into)",
    "struck red: removed",
    "orange frame: left float",
    "green frame: added by the quantizer",
    "edge pills (u8): Q/DQ pair inserted",
    "w: weight DQ",
    "b: bias DQ",
    "out: pair before a graph output",
]


@pytest.mark.slow
@pytest.mark.parametrize("side", ["700", "1200"])
def test_render_compare_key_wraps_between_entries(tmp_path, side):
    """The key strip above the two panes wrapped inside its entries ("green frame: added by the quantizer edge
    pills (u8): Q/DQ pair" then "inserted; w: ..." at 1172 px; "w:" then "weight DQ" at other widths): each of
    its lines now holds whole entries."""
    float_path, calib, export = _example_and_export(tmp_path)
    svg = tmp_path / "panes.svg"
    assert _render_compare(float_path, export, calib, svg, "--max-side", side) == 0
    texts = [t.replace("\u2060", "") for t in svg_texts(svg.read_text(encoding="utf-8"))]
    key = [
        t
        for t in texts[: next(i for i, t in enumerate(texts) if t.startswith(("Float:", "Quantized:")))]
        if t != "\u25a0"
    ]  # the swatches are texts of their own
    entry = "|".join(re.escape(e) for e in KEY_ENTRIES)
    assert " ".join(key) == " ".join(KEY_ENTRIES[:4]) + " " + "; ".join(KEY_ENTRIES[4:])
    assert len(key) > 1 and all(re.fullmatch(rf"(?:{entry})(?:(?: |; )(?:{entry}))*", t) for t in key), key


@pytest.mark.parametrize("side", ["1", "199", "16385", "-5"])
def test_render_refuses_a_max_side_outside_its_range(corpus, tmp_path, capsys, side):
    """--max-side 1 drew a 60x1 picture (the margins alone are 80 px): sides out of range are refused before
    the model is opened, in one line naming the range."""
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    with pytest.raises(SystemExit) as done:
        main(["render", str(model), "-o", str(tmp_path / "g.png"), "--max-side", side])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: workbench-cli render: argument --max-side: {side}: give 200 to 16384 (pixels of the "
        "picture's longest side) (see workbench-cli render --help)"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_render_at_the_smallest_side_draws_a_picture_that_size(corpus, tmp_path, capsys):
    png = tmp_path / "g.png"
    assert (
        main(
            ["render", str(corpus / "digits_cnn" / "model_opset17.onnx"), "-o", str(png), "--max-side", "200"]
        )
        == 0
    )
    w, h = _png_size(png)
    assert max(w, h) <= 200 and min(w, h) >= 80, (w, h)
    # the colour legend whole: its frame's top edge ends inside the picture, with its margin (before: cut at the
    # picture's right edge, 109 px, "Colour: op typ")
    pixels = np.asarray(Image.open(png).convert("RGB")).astype(int)
    edge = next(y for y in range(4, 16) if ((pixels[y] < 160).all(axis=1)).sum() > 40)
    right = int(np.flatnonzero((pixels[edge] < 160).all(axis=1)).max())
    assert right <= w - 6, (right, w)


def _node_fills(svg: str, ops: set[str]) -> list[tuple[str, str]]:
    """(op type, fill) of each node drawn in ``svg``: the fill of the group its op-type text is drawn in."""
    groups = re.finditer(
        r'<g fill="(#[0-9a-f]{6})"[^>]*>\s*(?:<(?:path|rect)[^>]*/>\s*)?<text[^>]*>([^<]*)</text>', svg
    )
    return [(text.strip(), fill) for fill, text in (m.groups() for m in groups) if text.strip() in ops]


def _legend_lines(svg: str) -> str:
    """The legend's text after its "no value" row, its wrapped lines joined by spaces."""
    texts = svg_texts(svg)
    return " ".join(texts[texts.index("no value") + 1 :])


@pytest.mark.slow
def test_render_sqnr_legend_names_the_grey_nodes(corpus, tmp_path, capsys):
    """``render --colour sqnr``: the legend said "no value" for the grey nodes and no more; it now says what they
    are, and only they are grey: the Relu of each Conv + Relu unit takes its unit's SQNR (it was grey too)."""
    from workbench import cli

    model = corpus / "digits_cnn" / "model_opset17.onnx"
    svg = tmp_path / "sqnr.svg"
    argv = [
        "render",
        str(model),
        "-o",
        str(svg),
        "--colour",
        "sqnr",
        "--data",
        str(corpus / "digits_cnn" / "calib.npz"),
        "--no-auto",
        "--no-latency-check",
        "--expand",
        "9",
    ]
    assert main(argv) == 0
    text = svg.read_text(encoding="utf-8")
    assert _legend_lines(text) == (
        "linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB "
        "(red) no value (grey): 2 nodes not quantized (in no unit: MaxPool, Flatten)"
    )
    fills = _node_fills(text, {"Conv", "Relu", "MaxPool", "AveragePool", "Flatten", "Gemm"})
    grey = colors.NO_VALUE.name()
    assert [op for op, fill in fills if fill == grey] == [
        "MaxPool",
        "Flatten",
        "Flatten",
    ]  # op type and short name
    # the other nodes in their unit's colour: the Convs' SQNR as analyze measures it, each Relu as its Conv
    _mode, _, errors, _, notes, _ = cli._render_values(
        cli.build_parser().parse_args(argv), api.open_model(model)
    )
    assert notes[-1].startswith("no value (grey): ")
    convs = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
    expected = [
        colors.error_color(round(errors[n] * 4) / 4).name() for n in convs
    ]  # the canvas's 0.25 dB steps
    assert [fill for op, fill in fills if op == "Conv"] == expected
    assert [fill for op, fill in fills if op == "Relu"] == expected
    assert all(errors[f"/f/f.{k}/Relu"] == errors[c] for k, c in zip((2, 5, 8), convs, strict=True))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sqnr.svg"]


def test_sqnr_colours_spread_over_units_and_name_the_grey_nodes():
    from types import SimpleNamespace as NS

    from workbench.cli_sqnr_colours import grey_note, node_sqnr

    units = {
        "conv": NS(nodes=["conv", "relu"], excluded=False),
        "gemm": NS(nodes=["gemm"], excluded=True),
        "mm": NS(nodes=["mm"], excluded=False),
        "add": NS(nodes=["add"], excluded=False),
    }
    rows = [
        NS(node="conv", sqnr_db=31.5),
        NS(node="mm", sqnr_db=float("nan")),
        NS(node="add", sqnr_db=-float("inf")),
    ]
    values = node_sqnr(rows, units)
    assert values == {"conv": 31.5, "relu": 31.5, "add": -100.0}  # all noise drawn red, not grey
    nodes = [
        NS(name=n, op_type=op)
        for n, op in [
            ("conv", "Conv"),
            ("relu", "Relu"),
            ("pool", "MaxPool"),
            ("gemm", "Gemm"),
            ("mm", "MatMul"),
            ("add", "Add"),
        ]
    ]
    assert grey_note(nodes, units, values, latency_kept=True) == (
        "no value (grey): 1 unit kept float by the recipe, a guard or the latency check (--no-latency-check "
        "measures the units it keeps); 1 node not quantized (in no unit: MaxPool); 1 unit quantized but not "
        "measured (no finite SQNR)"
    )
    assert grey_note(nodes, units, values, latency_kept=False).startswith(
        "no value (grey): 1 unit kept float by the recipe or a guard; "
    )
    assert grey_note(nodes[:2], units, values, latency_kept=False) == ""


def test_render_that_cannot_write_whole_leaves_nothing_and_says_so(corpus, tmp_path):
    """A write that fails part way (a full disk; here a 16 KiB file size limit on the drawing child) left a
    truncated SVG at the output, reported as written (exit 0): Qt's SVG and PNG file writers ignore a failed
    write. The picture is drawn in memory and written atomically: exit 2, one line naming the file, nothing left."""
    import json
    import os
    import resource
    import signal
    import subprocess
    import sys

    out = tmp_path / "g.svg"
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {"model": str(corpus / "digits_cnn" / "model_opset17.onnx"), "output": str(out), "mode": "op"}
        ),
        encoding="utf-8",
    )

    def limit():
        signal.signal(
            signal.SIGXFSZ, signal.SIG_IGN
        )  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONDONTWRITEBYTECODE": "1"}
    child = subprocess.run(
        [sys.executable, "-m", "workbench.qt.render", str(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    assert child.returncode == 2, (child.stdout, child.stderr)
    assert child.stderr == f"error: {out}: cannot write (File too large). Choose another path.\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.json"]  # no picture, no temporary file


def test_render_sqnr_of_an_already_quantized_file_points_to_the_compare_panes(corpus, tmp_path, capsys):
    """It pointed to `compare FLOAT q.onnx` (text) or 'render the float model'; the picture asked for is the
    compare panes, which render draws: `render FLOAT --compare q.onnx --data ...`."""
    d = corpus / "digits_cnn"
    q, out, calib = tmp_path / "q.onnx", tmp_path / "g.svg", str(d / "calib.npz")
    assert (
        main(
            [
                "quantize",
                str(d / "model_opset17.onnx"),
                "--data",
                calib,
                "--samples",
                "8",
                "--no-latency-check",
                "--no-auto",
                "-o",
                str(q),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["render", str(q), "--colour", "sqnr", "--data", calib, "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {q} is already quantized (QDQ): 22 quantized nodes (DequantizeLinear x15, QuantizeLinear x7); render "
        f"--colour sqnr quantizes a float model and measures it, so it would quantize this file again. It holds "
        f"QuantizeLinear / DequantizeLinear pairs around float ops (QDQ: onnxruntime fuses each pair and its op into an "
        f"integer kernel as it loads the file). To draw this file coloured by its SQNR against the float model it was "
        f"made from, run workbench-cli render FLOAT.onnx --compare {q} --data {calib} -o {out}; without --colour sqnr "
        f"render draws {q} as it is (--colour dtype: the dtypes it holds).\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


def test_sqnr_grey_note_names_the_most_frequent_op_types_only():
    """minilm_l6_v2 has 239 nodes of 23 op types outside every unit: the note listed all 23 (nine wrapped lines of
    the legend); it names the 4 most frequent and counts the rest."""
    from types import SimpleNamespace as NS

    from workbench.cli_sqnr_colours import grey_note

    ops = ["Shape"] * 5 + ["Gather"] * 4 + ["Cast"] * 3 + ["Unsqueeze"] * 2 + ["Erf", "Where"]
    nodes = [NS(name=f"n{k}", op_type=op) for k, op in enumerate(ops)]
    assert grey_note(nodes, {}, {"elsewhere": 30.0}, latency_kept=False) == (
        "no value (grey): 16 nodes not quantized (in no unit: Shape, Gather, Cast, Unsqueeze, 2 more op types)"
    )


def test_render_sqnr_with_no_unit_quantized_says_so_in_the_picture(corpus, tmp_path, capsys):
    """``render --colour sqnr --exclude '*'``: every node grey, and the reason was on stderr only; the legend
    now says no unit is quantized and why. It lists "no value" alone: its five SQNR colour rows and the note on
    their stops explained colours the picture did not draw; stderr says in one line what to do."""
    svg = tmp_path / "float.svg"
    argv = [
        "render",
        str(corpus / "digits_cnn" / "model_opset17.onnx"),
        "-o",
        str(svg),
        "--colour",
        "sqnr",
        "--data",
        str(corpus / "digits_cnn" / "calib.npz"),
        "--exclude",
        "*",
        "--no-auto",
        "--expand",
        "9",
    ]
    assert main(argv) == 0
    text = svg.read_text(encoding="utf-8")
    assert _legend_lines(text) == (
        "no unit quantized, so every node is grey (no value): 5 units kept float by the recipe or a guard; 5 nodes "
        "not quantized (in no unit: Relu, MaxPool, Flatten) dashed dark blue outline: kept float (5 nodes)"
    )  # before: the stops' note first; the outline the five kept nodes are drawn with is named too
    texts = svg_texts(text)
    assert not [t for t in texts if t.endswith(" dB")], texts  # before: "<= 5 dB" .. ">= 45 dB"
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: no unit is quantized (5 units kept float by the recipe or a guard), so every node is "
        "drawn grey; give an --exclude or --recipe that leaves some units quantized to colour them by "
        "their SQNR"
    ]  # before: none


def test_all_grey_note_says_what_to_do():
    from types import SimpleNamespace as NS

    from workbench.cli_sqnr_colours import all_grey_note

    units = {"conv": NS(nodes=["conv", "relu"], excluded=True), "gemm": NS(nodes=["gemm"], excluded=True)}
    assert all_grey_note(units, 2) == (
        "the latency check keeps 2 units float (measured slower quantized on this machine, as `quantize` writes "
        "them), so no unit is quantized and every node is drawn grey; run again with --no-latency-check to colour "
        "each unit by its SQNR"
    )
    assert "--exclude or --recipe" in all_grey_note(units, 0)
    assert "--colour op" in all_grey_note({}, 0)
    assert all("\n" not in all_grey_note(u, n) for u, n in ((units, 2), (units, 0), ({}, 0)))


def test_sqnr_grey_note_of_a_model_with_no_unit_quantized():
    from types import SimpleNamespace as NS

    from workbench.cli_sqnr_colours import grey_note

    units = {"conv": NS(nodes=["conv", "relu"], excluded=True), "gemm": NS(nodes=["gemm"], excluded=True)}
    nodes = [NS(name=n, op_type=op) for n, op in [("conv", "Conv"), ("relu", "Relu"), ("gemm", "Gemm")]]
    assert grey_note(nodes, units, {}, latency_kept=True) == (
        "no unit quantized, so every node is grey (no value): 2 units kept float by the recipe, a guard or the "
        "latency check (--no-latency-check measures the units it keeps)"
    )
    # one unit measured: the usual note
    assert grey_note(nodes[2:], units, {"conv": 20.0, "relu": 20.0}, latency_kept=False) == (
        "no value (grey): 1 unit kept float by the recipe or a guard"
    )


def _quantized_digits_cnn(corpus: Path, tmp_path: Path) -> Path:
    """digits_cnn opset 17 quantized with the preset's MinMax (no recipe choice, no latency check): tmp_path/q.onnx."""
    d, q = corpus / "digits_cnn", tmp_path / "q.onnx"
    assert (
        main(
            [
                "quantize",
                str(d / "model_opset17.onnx"),
                "--data",
                str(d / "calib.npz"),
                "-o",
                str(q),
                "--no-auto",
                "--no-latency-check",
            ]
        )
        == 0
    )
    return q


def test_render_draws_the_node_tags_and_int_marks_its_legend_explains(corpus, tmp_path):
    """A quantized digits_cnn with its group collapsed (--expand 0): the view was sized for the graph alone, and
    the fit shrank it beside the legend to 45 %, where node tags and INT marks are not drawn, while the legend
    explained both. The picture now makes the legend its room: the Gemm's tag and INT mark are drawn; where the
    picture is too small for them, the legend leaves their notes out."""
    q, svg = _quantized_digits_cnn(corpus, tmp_path), tmp_path / "q.svg"
    assert main(["render", str(q), "-o", str(svg), "--colour", "dtype", "--expand", "0"]) == 0
    texts = svg_texts(svg.read_text(encoding="utf-8"))
    legend = " ".join(texts)
    assert "node tag: folded Q/DQ" in legend and "INT: integer kernel" in legend
    assert "w:i8 b:i32" in texts and "INT" in texts  # drawn on the Gemm (before: neither)
    # a picture too small for them (--max-side 416: the nodes at ~20 %): neither drawn, and the legend no longer
    # explains them (it did: node tag, INT, edge badge)
    small = tmp_path / "small.svg"
    assert main(["render", str(q), "-o", str(small), "--colour", "dtype", "--max-side", "416"]) == 0
    texts = svg_texts(small.read_text(encoding="utf-8"))
    assert not {"w:i8 b:i32", "in:u8 w:i8 b:i32", "INT", "u8"} & set(texts), texts
    legend = " ".join(texts)
    assert "edges coloured by the dtype they carry" in legend
    assert "node tag" not in legend and "INT:" not in legend and "edge badge" not in legend, legend


@pytest.mark.slow
def test_a_small_quantized_picture_labels_its_nodes_and_explains_only_the_group_marks_drawn(corpus, tmp_path):
    """``render q.onnx --colour dtype --max-side 416`` (a quantized digits_cnn, nodes at 26 %): the node boxes were
    blank, and the legend explained group titles naming the kernels inside and collapsed boxes coloured by them,
    neither drawn (the frame ``f`` is open, titled by its name alone). The op types are drawn in the boxes; the
    legend explains a collapsed box's colour only where one is shown (``--expand 0``), and never the titles."""
    q, svg = _quantized_digits_cnn(corpus, tmp_path), tmp_path / "q.svg"
    assert main(["render", str(q), "-o", str(svg), "--colour", "dtype", "--max-side", "416"]) == 0
    texts = svg_texts(svg.read_text(encoding="utf-8"))
    assert texts.count("Conv") == 3 and texts.count("Relu") == 3 and "Gemm" in texts  # before: none
    legend = " ".join(texts)
    assert "group title" not in legend and "collapsed group" not in legend, legend  # before: both
    collapsed = tmp_path / "collapsed.svg"
    assert (
        main(
            [
                "render",
                str(q),
                "-o",
                str(collapsed),
                "--colour",
                "dtype",
                "--max-side",
                "416",
                "--expand",
                "0",
            ]
        )
        == 0
    )
    texts = svg_texts(collapsed.read_text(encoding="utf-8"))
    legend = " ".join(texts)
    assert (
        "a collapsed group's box is coloured by the activation dtype of the quantized kernels inside"
        in legend
    )
    assert "group title" not in legend, legend  # the box shows its name alone at this size
