"""A project's ``latency_kept``: which of the recipe's exclusions the latency check made, with its measured ratio
and note. Saved and loaded as written; projects without it (older ones) load as before and save without it; a
replay keeps those units float as the recipe says and reports them as the latency check's.

Before, a project held only the recipe: the units the latency check kept float read like the user's exclusions.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import onnx
import pytest

from workbench.core import api
from workbench.core.errors import ProjectError
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.pipeline.latency_fallback import _kept_issue, _small_island_note
from workbench.core.pipeline.latency_record import latency_kept_record, moved_record, replay_notes

#: the CLI with its latency measurements fixed, not timed: every quantized model half its float model's latency,
#: every unit probe of the latency placement twice (it keeps each probed unit float: digits_cnn's first Conv, a
#: single-channel input, and its AveragePool; its int8 share off, which would keep none of 5 Conv/Gemm units float)
_FIXED_CLI = (
    "import sys\n"
    "from workbench.core.pipeline import latency_check, latency_placement\n"
    "latency_placement.MIN_INT8_SHARE = 0.0\n"
    "from workbench.core.runtime import unit_latency\n"
    "from workbench.core.runtime.latency import LatencyComparison as L\n"
    "latency_check.compare = lambda f, q, feed, **k: L(float_s=1e-3, quant_s=0.5e-3, runs=5)\n"
    "unit_latency.compare = lambda f, q, feed, **k: L(float_s=1e-3, quant_s=2e-3, runs=5)\n"
    "from workbench.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n")

KEPT = ["/f/f.0/Conv", "/f/f.9/AveragePool"]


def _project_file(tmp_path, **fields):
    (tmp_path / "m.onnx").write_bytes(b"not read: check_model=False")
    doc = {"schema_version": 1, "tool_version": "0.1.0", "model": {"path": "m.onnx", "sha256": "0" * 64},
           "recipe": {}, **fields}
    path = tmp_path / "p.wbproj"
    path.write_text(json.dumps(doc))
    return path


def test_latency_kept_round_trips_through_save_and_load(tmp_path):
    project = api.load_project(_project_file(tmp_path), check_model=False)
    project.latency_kept = [api.LatencyKept(node="Conv_0", ratio=1.4, reason="kept in float: as QLinearConv it "
                                            "measured 1.40x its float latency"),
                            api.LatencyKept(node="Pool_3", reason="kept float by the latency check")]
    api.save_project(project, tmp_path / "again.wbproj")
    saved = json.loads((tmp_path / "again.wbproj").read_text())["latency_kept"]
    assert saved == [{"node": "Conv_0", "ratio": 1.4, "reason": "kept in float: as QLinearConv it measured 1.40x its "
                                                                 "float latency"},
                     {"node": "Pool_3", "ratio": None, "reason": "kept float by the latency check"}]
    loaded = api.load_project(tmp_path / "again.wbproj", check_model=False)
    assert loaded.latency_kept == project.latency_kept


def test_a_project_without_latency_kept_loads_and_saves_as_before(tmp_path):
    path = _project_file(tmp_path)
    old = api.load_project(path, check_model=False)
    assert old.latency_kept is None
    api.save_project(old, tmp_path / "again.wbproj")
    assert "latency_kept" not in json.loads((tmp_path / "again.wbproj").read_text())
    empty = api.load_project(_project_file(tmp_path, latency_kept=[]), check_model=False)
    api.save_project(empty, tmp_path / "empty.wbproj")
    assert "latency_kept" not in json.loads((tmp_path / "empty.wbproj").read_text())


@pytest.mark.parametrize(("entry", "where"), [({"node": "a", "ratio": -1}, "latency_kept.0.ratio"),
                                              ({"node": "a", "why": "x"}, "latency_kept.0.why"),
                                              ({"ratio": 1.2}, "latency_kept.0.node"),
                                              # a hand-edited Infinity: the replay printed "it measured infx"
                                              ({"node": "a", "ratio": float("inf")}, "latency_kept.0.ratio")])
def test_a_bad_latency_kept_entry_names_the_field(tmp_path, entry, where):
    with pytest.raises(ProjectError, match=f"invalid project field {where}:"):
        api.load_project(_project_file(tmp_path, latency_kept=[entry]), check_model=False)


def test_the_record_takes_each_units_ratio_and_note_from_the_latency_checks_issues():
    probe = PlanIssue("Conv_0", Severity.INFO, "kept in float: as QLinearConv it measured 1.23x its float latency at "
                      "input [1, 8, 48, 192] (onnxruntime CPU, 1 thread)", code=IssueCode.LATENCY_KEPT_FLOAT,
                      units=("Conv_0",), ratio=1.23)
    island = _kept_issue(["Conv_5", "Conv_6", "Add_7", "Conv_8", "Conv_9"], 1.4, 0.97, 2)
    other = PlanIssue("Conv_6", Severity.INFO, "an unrelated note", code=IssueCode.FLOAT_ISLAND)
    record = latency_kept_record(["Conv_9", "Conv_6", "Conv_0", "Conv_5"], [other, probe, island])
    assert [(e.node, e.ratio) for e in record] == [("Conv_0", 1.23), ("Conv_5", 1.4), ("Conv_6", 1.4), ("Conv_9", 1.4)]
    assert record[0].reason == probe.message and record[1].reason == record[2].reason == island.message
    assert record[3].reason == island.message  # past the three the note names: its island's reason all the same
    assert latency_kept_record(["X"], []) == [api.LatencyKept(node="X", reason="kept float by the latency check "
                                                                              "(slower quantized)")]


def test_the_record_reads_the_units_of_each_island_not_its_message():
    """Node names holding ", " and units past the three an island's message lists: the record parsed the message,
    so '/blk/Conv, 1' read as '/blk/Conv' and '1', and the 4th and 5th units of the second island took the first
    island's note and ratio. The notes carry their units and ratio (PlanIssue.units / ratio): exact entries."""
    first = ["Conv_20", "Add_21"]
    second = ["/blk/Conv, 1", "/blk/Add, 2", "Mul_3", "/blk/Conv, 4", "Conv_5"]
    probe = PlanIssue("/pool/AveragePool, 0", Severity.INFO, "kept in float: as QLinearAveragePool it measured 1.80x "
                      "its float latency at input [1, 64, 4, 4] (onnxruntime CPU, 1 thread)",
                      code=IssueCode.LATENCY_KEPT_FLOAT, units=("/pool/AveragePool, 0",), ratio=1.8)
    notes = [probe, _kept_issue(first, 1.31, 1.2, 2), _kept_issue(second, 1.25, 0.97, 2)]
    assert notes[2].message.startswith("kept float with its island of 5 node units (/blk/Conv, 1, /blk/Add, 2, "
                                       "Mul_3 and 2 more): a connected group of quantized node units between float nodes; as "
                                       "quantized the model measured 1.25x")
    record = latency_kept_record([*second, *first, probe.node], notes)
    expected = sorted([(n, 1.25, notes[2].message) for n in second] + [(n, 1.31, notes[1].message) for n in first]
                      + [(probe.node, 1.8, probe.message)])
    assert [(e.node, e.ratio, e.reason) for e in record] == expected


def test_replay_notes_name_only_the_units_the_recipe_still_excludes():
    record = [api.LatencyKept(node="a", ratio=1.5, reason="r"), api.LatencyKept(node="b", reason="r")]
    notes = replay_notes(record, ["a", "c"], "p.wbproj")
    assert [(n.node, n.code, n.severity) for n in notes] == [("a", IssueCode.LATENCY_KEPT_FLOAT, Severity.INFO)]
    assert notes[0].message.startswith("kept float by the latency check when p.wbproj was saved (slower quantized on "
                                       "that machine; it measured 1.50x its float latency)")


def _cli(*args, fixed: bool = False) -> subprocess.CompletedProcess:
    head = ["-c", _FIXED_CLI] if fixed else ["-m", "workbench.cli"]
    run = subprocess.run([sys.executable, *head, *(str(a) for a in args)], capture_output=True, text=True, timeout=540)
    assert run.returncode == 0, run.stderr
    return run


def test_a_saved_quantize_records_its_latency_kept_units_and_the_replay_reports_them(tmp_path, corpus):
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(corpus / "digits_cnn" / name, tmp_path / name)
    project = tmp_path / "p.wbproj"
    _cli("quantize", tmp_path / "model_opset17.onnx", "--data", tmp_path / "calib.npz", "--samples", "16", "--no-auto",
         "-o", tmp_path / "first.onnx", "--save-project", project, fixed=True)
    saved = json.loads(project.read_text())
    assert [e["node"] for e in saved["latency_kept"]] == KEPT and [e["ratio"] for e in saved["latency_kept"]] == [2.0, 2.0]
    assert all(saved["recipe"]["overrides"][n]["exclude"] for n in KEPT)

    run = _cli("quantize", project, "-o", tmp_path / "replayed.onnx")  # no latency check on replay: nothing measured
    assert (tmp_path / "replayed.onnx").read_bytes() == (tmp_path / "first.onnx").read_bytes()  # kept float as before
    for node in KEPT:
        assert f"note: {node}: kept float by the latency check when {project} was saved (slower quantized on that " \
               "machine; it measured 2.00x its float latency)" in run.stderr
    model = api.open_model(tmp_path / "model_opset17.onnx")
    _, result = api.replay_project(project)
    latency = [i.node for i in result.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert latency == KEPT and all(result.plan.units[n].excluded for n in KEPT) and model is not None


def test_moved_record_follows_the_overrides_to_their_new_names():
    record = [api.LatencyKept(node="a", ratio=1.5, reason="r"), api.LatencyKept(node="b", reason="s")]
    moved = moved_record(record, {"a": "z_a", "b": None})
    assert moved == [api.LatencyKept(node="z_a", ratio=1.5, reason="r")]
    assert moved_record(record, {"a": None}) is None and moved_record(None, {}) is None


def test_a_retargeted_project_keeps_the_latency_checks_units_under_their_new_names(tmp_path, corpus):
    """``quantize P.wbproj --model NEW.onnx``: the project's overrides move to the new model's names; its
    latency_kept moves with them, and the retarget reports them as a replay does."""
    shutil.copy(corpus / "digits_cnn" / "model_opset17.onnx", tmp_path / "old.onnx")
    shutil.copy(corpus / "digits_cnn" / "calib.npz", tmp_path / "calib.npz")
    proto = onnx.load(tmp_path / "old.onnx")
    for node in proto.graph.node:
        node.name = node.name.replace("/f/f.0/Conv", "stem_conv")
    onnx.save(proto, tmp_path / "new.onnx")
    recipe = api.make_recipe("cpu-u8s8").with_excluded(KEPT)
    project = api.new_project(tmp_path / "old.onnx", recipe, data={"path": str(tmp_path / "calib.npz")}, samples=16)
    project.latency_kept = [api.LatencyKept(node=n, ratio=2.0, reason="kept in float") for n in KEPT]
    api.save_project(project, tmp_path / "p.wbproj")

    _, result, rt, out = api.retarget_project(tmp_path / "p.wbproj", tmp_path / "new.onnx")
    assert {r.old: r.new for r in rt.rows if r.kind == "override"} == {"/f/f.0/Conv": "stem_conv",
                                                                       "/f/f.9/AveragePool": "/f/f.9/AveragePool"}
    assert [(e.node, e.ratio) for e in out.latency_kept] == [("/f/f.9/AveragePool", 2.0), ("stem_conv", 2.0)]
    assert sorted(i.node for i in result.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT) == \
        ["/f/f.9/AveragePool", "stem_conv"]


def test_an_island_of_a_model_too_small_to_pay_takes_the_whole_models_ratio():
    """digits_cnn on this Xeon: every unit left float because the model measured 1.11x float as quantized; the
    islands' notes say why only by pointing at that warning, so their entries were saved with ratio None (3 of 5)
    and the replay printed no figure for them."""
    whole = PlanIssue("", Severity.WARNING, "quantization does not pay at this size: as quantized the model measured "
                      "1.11x its float latency (3 us slower per run of 0.027 ms: the Q/DQ transitions cost more than "
                      "the integer kernels save), so every unit is left float", code=IssueCode.LATENCY_KEPT_FLOAT)
    whole.ratio = 1.11
    island = _small_island_note(["/f/f.3/Conv", "/f/f.7/Conv"], 1.11)
    island.ratio = None  # a note with no ratio of its own takes the whole model's warning's
    probe = PlanIssue("/f/f.0/Conv", Severity.INFO, "kept in float: as QLinearConv it measured 1.30x its float latency",
                      code=IssueCode.LATENCY_KEPT_FLOAT, units=("/f/f.0/Conv",), ratio=1.3)
    record = latency_kept_record(["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"], [probe, island, whole])
    assert [(e.node, e.ratio) for e in record] == [("/f/f.0/Conv", 1.3), ("/f/f.3/Conv", 1.11), ("/f/f.7/Conv", 1.11)]
    assert record[1].reason == record[2].reason == island.message


def test_a_unit_named_twice_in_latency_kept_is_refused(tmp_path):
    """A hand-edited latency_kept naming a unit twice loaded, and the replay reported that unit twice."""
    twice = [{"node": "/f/f.0/Conv", "ratio": 1.3}, {"node": "/f/f.0/Conv"}]
    with pytest.raises(ProjectError, match="invalid project field latency_kept: .*node '/f/f.0/Conv' is named twice; "
                                           "keep one entry per unit"):
        api.load_project(_project_file(tmp_path, latency_kept=twice), check_model=False)
    # a retarget that matches two of the record's units to one node keeps one entry for it
    record = [api.LatencyKept(node="a", ratio=1.5, reason="r"), api.LatencyKept(node="b", reason="s")]
    assert moved_record(record, {"a": "z", "b": "z"}) == [api.LatencyKept(node="z", ratio=1.5, reason="r")]
