"""Flat-name blocks are titled by what they hold (op types with counts, first and last node name),
not by a number ('#0-7', 'Conv #1'), on ppocrv4_rec whose node names are p2o.Conv.32, p2o.Add.7 ..."""

from __future__ import annotations

import onnx

from workbench.core.graph.block_titles import block_title, short_name
from workbench.core.graph.hierarchy import build_hierarchy
from workbench.core.graph.layout import graph_structure


def test_title_counts_ops_and_names_the_span():
    ops = ["Constant", "Conv", "Mul", "Add", "Mul", "Add", "Mul", "HardSigmoid"]
    names = ["c0", "p2o.Conv.3", "p2o.Mul.1", "p2o.Add.1", "p2o.Mul.2", "p2o.Add.2", "p2o.Mul.3", "p2o.HS.0"]
    assert block_title(names, ops) == "Conv, Mul \u00d73 \u00b7 p2o.Conv.3 \u2013 HS.0"  # "p2o." said once
    assert block_title(["c0", "c1"], ["Constant", "Constant"]) == "Constant \u00d72 \u00b7 c0 \u2013 c1"
    assert block_title(["p2o.Cast.2", "p2o.Cast.41"], ["Cast", "Cast"]) == "Cast \u00d72 \u00b7 p2o.Cast.2 \u2013 41"
    assert block_title([], []) == ""


def test_long_names_are_cut_in_the_middle():
    name = "model/backbone/stage3/block12/conv_pointwise_out"
    cut = short_name(name, 22)
    assert len(cut) == 22 and cut.startswith("model/back") and cut.endswith("ntwise_out") and "\u2026" in cut


def test_ppocr_blocks_say_what_they_hold(corpus):
    s = graph_structure(onnx.load(corpus / "ppocrv4_rec" / "model.onnx"), collapse_qdq=True)
    h = build_hierarchy(s.names, s.op_types)
    assert h.source == "blocks" and len(h) == 54
    stage = h.titles[0]
    assert stage == "Conv \u00d77, Mul \u00d718 \u00b7 p2o.Conv.0 \u2013 Add.46"  # was "#0-7"
    block = h.paths.index("#0-7/Conv #2")
    assert h.titles[block] == "Conv, Mul \u00d73 \u00b7 p2o.Conv.1 \u2013 Add.6"  # was "Conv #2"
    assert all("\u00b7 " in t and not t.startswith("#") for t in h.titles)
