"""Flat-name blocks are titled by the nodes they span (first and last node name), not by a number ('#0-7',
'Conv #1'), on ppocrv4_rec whose node names are p2o.Conv.32, p2o.Add.7 ... The op types they hold are the
collapsed box's second line; with them in front of the names the box's middle elision left 'Conv, A… Add.6'."""

from __future__ import annotations

import onnx

from workbench.core.graph.block_titles import block_title, common_head, short_name
from workbench.core.graph.hierarchy import build_hierarchy
from workbench.core.graph.layout import graph_structure


def test_title_names_the_span():
    ops = ["Constant", "Conv", "Mul", "Add", "Mul", "Add", "Mul", "HardSigmoid"]
    names = ["c0", "p2o.Conv.3", "p2o.Mul.1", "p2o.Add.1", "p2o.Mul.2", "p2o.Add.2", "p2o.Mul.3", "p2o.HS.0"]
    assert block_title(names, ops) == "p2o.Conv.3 \u2013 HS.0"  # "p2o." said once
    assert block_title(["c0", "c1"], ["Constant", "Constant"]) == "c0 \u2013 c1"  # Constants only: they name it
    assert block_title(["p2o.Cast.2", "p2o.Cast.41"], ["Cast", "Cast"]) == "p2o.Cast.2 \u2013 41"
    assert block_title(["c0", "p2o.Conv.3"], ["Constant", "Conv"]) == "p2o.Conv.3"
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
    assert stage == "Conv.0 \u2013 Add.46"  # "p2o." starts nearly every name  # was "#0-7"
    block = h.paths.index("#0-7/Conv #2")
    assert h.titles[block] == "Conv.1 \u2013 Add.6"  # was "Conv #2"
    assert all(not t.startswith("#") and len(t) <= 2 * 22 + 3 for t in h.titles)
    assert [t for t in h.titles if "p2o." in t] == []
    assert h.titles[1] == "Constant#0 \u2013 Constant#233"  # unnamed nodes keep their whole names


def test_the_head_nearly_every_name_shares_is_left_out():
    names = [f"p2o.Conv.{i}" for i in range(9)] + ["Constant#0"]
    assert common_head(names, ["Conv"] * 10) == "p2o."
    assert common_head(names[:5] + [f"x{i}" for i in range(5)], ["Conv"] * 10) == ""  # half: not common enough
    consts = [f"Constant#{i}" for i in range(20)]
    assert common_head(names + consts, ["Conv"] * 10 + ["Constant"] * 20) == "p2o."  # Constants not counted
    assert block_title(["p2o.Conv.3", "p2o.HS.0"], ["Conv", "HardSigmoid"], "p2o.") == "Conv.3 \u2013 HS.0"
    assert block_title(["p2o.", "p2o.HS.0"], ["Conv", "HardSigmoid"], "p2o.") == "p2o. \u2013 HS.0"  # never empty
