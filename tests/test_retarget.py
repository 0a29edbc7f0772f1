"""Project retargeting: ``quantize job.wbproj --model NEW.onnx`` re-applies the project's recipe to a
new version of its model (overrides by name, then by structure; cached ranges kept only for tensors
that provably did not change)."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import numpy_helper

from workbench import cli
from workbench.core import api

OVERRIDES = {"/f/f.3/Conv": {"activation": {"dtype": "uint16"}},
             "/f/f.7/Conv": {"weight": {"observer": "minmax", "granularity": "per_tensor"}},
             "/head/head.2/Gemm": {"exclude": True}}


def _project(corpus, tmp_path, capsys, *, data=True):
    d = corpus / "digits_cnn"
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "reduce_range": True, "overrides": OVERRIDES}))
    args = ["quantize", str(d / "model_opset17.onnx"), "--recipe", str(recipe), "--samples", "32",
            "-o", str(tmp_path / "a17.onnx"), "--save-project", str(tmp_path / "job.wbproj"), "--no-search", "--no-auto",
            "--no-latency-check"]
    if data:
        args += ["--data", str(d / "calib.npz")]
    assert cli.main(args) == 0
    capsys.readouterr()
    return tmp_path / "job.wbproj"


def _fresh(model, recipe_doc, data, out, tmp_path) -> bytes:
    r = tmp_path / "fresh_recipe.json"
    r.write_text(json.dumps(recipe_doc))
    assert cli.main(["quantize", str(model), "--recipe", str(r), "--data", str(data), "--samples", "32",
                     "-o", str(out), "--no-search", "--no-auto", "--no-latency-check"]) == 0
    return out.read_bytes()


def _table(text: str) -> dict[str, tuple[str, str]]:
    """override rows of the printed table: old name -> (new name, matched by)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("override "):
            parts = line.split()
            rows[parts[1]] = (parts[2], parts[3]) if parts[3] != "exist)" else (None, "-")
    return rows


def _renamed_copy(src, dst) -> dict[str, str]:
    """``src`` with every node and intermediate tensor renamed (an exporter that numbers differently)."""
    m = onnx.load(src)
    keep = {i.name for i in m.graph.input} | {o.name for o in m.graph.output} | {i.name for i in m.graph.initializer}
    tensors = {}
    nodes = {}
    for k, n in enumerate(m.graph.node):
        nodes[n.name] = f"node_{k}_{n.op_type.lower()}"
        n.name = nodes[n.name]
        for j, o in enumerate(n.output):
            if o not in keep:
                tensors[o] = f"t{k}_{j}"
    for n in m.graph.node:
        n.input[:] = [tensors.get(i, i) for i in n.input]
        n.output[:] = [tensors.get(o, o) for o in n.output]
    onnx.save(m, dst)
    return nodes


def test_project_applied_to_opset13_lands_every_override_and_equals_fresh_quantize(corpus, tmp_path, capsys):
    proj = _project(corpus, tmp_path, capsys)
    d = corpus / "digits_cnn"
    out = tmp_path / "r13.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(d / "model_opset13.onnx"), "-o", str(out),
                     "--save-project", str(tmp_path / "job13.wbproj")]) == 0
    text = capsys.readouterr().out
    assert _table(text) == {n: (n, "name") for n in OVERRIDES}
    assert "overrides: 3/3 applied (0 moved to a new name, 0 no longer exist)" in text
    assert "6 ranges kept (same tensor), 0 dropped" in text
    stored = json.loads(proj.read_text())["recipe"]  # the recipe as the project holds it
    fresh = _fresh(d / "model_opset13.onnx", stored, d / "calib.npz", tmp_path / "f13.onnx", tmp_path)
    assert out.read_bytes() == fresh
    # the saved project replays the new model to the same bytes
    assert cli.main(["quantize", str(tmp_path / "job13.wbproj"), "-o", str(tmp_path / "again.onnx")]) == 0
    assert (tmp_path / "again.onnx").read_bytes() == fresh


def test_renamed_model_moves_overrides_by_structure(corpus, tmp_path, capsys):
    proj = _project(corpus, tmp_path, capsys)
    d = corpus / "digits_cnn"
    new = tmp_path / "renamed13.onnx"
    names = _renamed_copy(d / "model_opset13.onnx", new)
    out = tmp_path / "r.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(new), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert _table(text) == {n: (names[n], "structure") for n in OVERRIDES}
    assert "overrides: 3/3 applied (3 moved to a new name, 0 no longer exist)" in text
    assert "6 ranges kept (same tensor), 0 dropped" in text  # same weights: ranges follow the renames
    stored = json.loads(proj.read_text())["recipe"]
    stored["overrides"] = {names[k]: v for k, v in stored["overrides"].items()}
    fresh = _fresh(new, stored, d / "calib.npz", tmp_path / "fresh.onnx", tmp_path)
    assert out.read_bytes() == fresh


def test_retrained_model_recalibrates_changed_tensors_only(corpus, tmp_path, capsys):
    proj = _project(corpus, tmp_path, capsys)
    d = corpus / "digits_cnn"
    m = onnx.load(d / "model_opset13.onnx")
    w = next(i for i in m.graph.initializer if i.name == "f.7.weight")  # "retrain" the third Conv
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.1), w.name))
    new = tmp_path / "retrained.onnx"
    onnx.save(m, new)
    out = tmp_path / "r.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(new), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert _table(text) == {n: (n, "name") for n in OVERRIDES}
    # the input and the ranges before /f/f.7/Conv hold; its output and everything after changed
    rt = api.retarget_recipe(api.open_model(d / "model_opset17.onnx"), api.open_model(new),
                             api.load_project(proj).recipe,
                             api.CalibrationResult.from_json(api.load_project(proj).calibration))
    assert rt.dropped_ranges and all(t.startswith(("/f/f.8", "/f/f.9", "/head")) for t in rt.dropped_ranges)
    assert "input" in rt.kept_ranges
    assert f"{len(rt.kept_ranges)} ranges kept (same tensor), {len(rt.dropped_ranges)} dropped" in text
    stored = json.loads(proj.read_text())["recipe"]
    assert out.read_bytes() == _fresh(new, stored, d / "calib.npz", tmp_path / "fresh.onnx", tmp_path)


def test_missing_override_and_glob_reported(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    recipe = api.make_recipe("cpu-u8s8").model_copy(update={"exclude": ["/head/*"]})
    recipe = recipe.with_excluded(["/f/f.3/Conv"])
    old = api.open_model(d / "model_opset17.onnx")
    m = onnx.load(d / "model_opset13.onnx")
    for n in m.graph.node:  # the head's nodes renamed and the second Conv gone (a different model)
        n.name = n.name.replace("/head/", "/classifier/")
    conv = next(n for n in m.graph.node if n.name == "/f/f.3/Conv")
    relu = next(n for n in m.graph.node if n.name == "/f/f.5/Relu")
    relu.input[0] = conv.input[0]
    m.graph.node.remove(conv)
    new_path = tmp_path / "other.onnx"
    onnx.save(m, new_path)
    rt = api.retarget_recipe(old, api.open_model(new_path), recipe)
    table = api.format_match_table(rt)
    assert [(r.old, r.new, r.how) for r in rt.rows] == [("/f/f.3/Conv", None, "missing"),
                                                        ("/head/*", None, "missing")]
    assert "(no longer exists)" in table and "0 nodes (was 2)" in table
    assert rt.recipe.overrides == {}
    # a glob that matches nothing is not an override: counts are of overrides only (was "-1/1 applied")
    assert "overrides: 0/1 applied (0 moved to a new name, 1 no longer exist)" in table
    assert "warning: none of the project's overrides matches this model" in table


def test_match_summary_counts_overrides_only():
    from workbench.core.pipeline.retarget import MatchRow, Retarget

    rows = [MatchRow("override", "/a", "/a", "name", ""), MatchRow("override", "/b", "/c", "structure", ""),
            MatchRow("glob", "/x/*", None, "missing", "")]
    table = api.format_match_table(Retarget(api.make_recipe("cpu-u8s8"), None, rows))
    assert "overrides: 2/2 applied (1 moved to a new name, 0 no longer exist)" in table
    assert "warning" not in table and table.startswith("recipe entry ")
    # a bare preset names no node: one line says so instead of a header over no rows
    bare = api.format_match_table(Retarget(api.make_recipe("cpu-u8s8"), None, []))
    assert bare.splitlines()[0] == "recipe: no overrides or name rules to match (it applies to any model as it is)"
    assert "recipe entry" not in bare


def test_retarget_without_data_refused_when_ranges_changed(corpus, tmp_path, capsys):
    proj = _project(corpus, tmp_path, capsys)
    doc = json.loads(proj.read_text())
    doc["data"] = None
    proj.write_text(json.dumps(doc))
    m = onnx.load(corpus / "digits_cnn" / "model_opset13.onnx")
    w = next(i for i in m.graph.initializer if i.name == "f.7.weight")
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.1), w.name))
    onnx.save(m, tmp_path / "retrained.onnx")
    out = tmp_path / "r.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(tmp_path / "retrained.onnx"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no calibration data" in err[0] and "--data" in err[0]
    assert not out.exists()


def test_changed_model_error_points_at_retargeting(corpus, tmp_path, capsys):
    proj = _project(corpus, tmp_path, capsys)
    model = tmp_path / "model_opset17.onnx"
    m = onnx.load(corpus / "digits_cnn" / "model_opset17.onnx")
    m.producer_name = "retrained"  # a different file at the project's model path
    onnx.save(m, model)
    doc = json.loads(proj.read_text())
    doc["model"]["path"] = model.name
    proj.write_text(json.dumps(doc))
    assert cli.main(["quantize", str(proj), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert "changed since the project was saved" in err
    assert f"workbench-cli quantize {proj} --model NEW.onnx" in err


def test_rule_that_no_longer_matches_recalibrates_its_tensor(corpus, tmp_path, capsys):
    """A rule giving one tensor a percentile observer matches nothing in a renamed model: that tensor's
    cached range no longer serves (MinMax now), so the project's data recalibrates it, and the result is
    the fresh quantize of the new model with the same recipe; without data it is refused naming the
    count. (It failed with "no usable ranges", with or without --data: the cache only looked complete.)"""
    d = corpus / "digits_cnn"
    recipe = {"preset": "cpu-u8s8", "rules": [{"name": "/f/f.7/*", "activation": {"observer": "percentile"}}]}
    (tmp_path / "rec.json").write_text(json.dumps(recipe))
    proj = tmp_path / "job.wbproj"
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--recipe", str(tmp_path / "rec.json"),
                     "--data", str(d / "calib.npz"), "--samples", "32", "-o", str(tmp_path / "a.onnx"),
                     "--save-project", str(proj), "--no-search", "--no-latency-check"]) == 0
    m = onnx.load(d / "model_opset17.onnx")
    for n in m.graph.node:
        n.name = n.name.replace("/f/", "/features/")
    onnx.save(m, tmp_path / "renamed.onnx")
    capsys.readouterr()
    out = tmp_path / "r.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(tmp_path / "renamed.onnx"), "-o", str(out)]) == 0
    assert ("calibration cache: 5 ranges kept (same tensor), 0 dropped (changed or gone; recalibrated), 1 of the "
            "kept recalibrated (their settings changed: /f/f.8/Relu_output_0)") in capsys.readouterr().out
    fresh = _fresh(tmp_path / "renamed.onnx", recipe, d / "calib.npz", tmp_path / "fresh.onnx", tmp_path)
    assert onnx.load(str(out)).graph == onnx.load_from_string(fresh).graph
    doc = json.loads(proj.read_text())
    doc["data"] = None
    proj.write_text(json.dumps(doc))
    capsys.readouterr()
    assert cli.main(["quantize", str(proj), "--model", str(tmp_path / "renamed.onnx"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the ranges of 1 tensor must be calibrated again" in err[0]


def test_retargeted_project_records_the_new_models_external_data(corpus, tmp_path, capsys):
    """A project retargeted onto a model whose weights sit in an external ``.data`` file records that file's
    sha256 (it recorded none), so its replay refuses other weights saved beside the same graph file."""
    import hashlib

    proj = _project(corpus, tmp_path, capsys)
    ext = tmp_path / "ext"
    ext.mkdir()
    onnx.save(onnx.load(corpus / "digits_cnn" / "model_opset13.onnx"), str(ext / "m.onnx"),
              save_as_external_data=True, all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=0)
    data = ext / "m.onnx.data"
    assert cli.main(["quantize", str(proj), "--model", str(ext / "m.onnx"), "-o", str(tmp_path / "r.onnx"),
                     "--save-project", str(tmp_path / "ext.wbproj")]) == 0
    saved = json.loads((tmp_path / "ext.wbproj").read_text())["model"]
    assert saved["external_data"] == [["m.onnx.data", hashlib.sha256(data.read_bytes()).hexdigest()]]
    capsys.readouterr()
    data.write_bytes(data.read_bytes()[:-4] + b"\x00\x00\x80\x3f")  # another last weight, same size
    assert cli.main(["quantize", str(tmp_path / "ext.wbproj"), "-o", str(tmp_path / "again.onnx")]) == 2
    assert "m.onnx.data" in capsys.readouterr().err and not (tmp_path / "again.onnx").exists()


def test_retarget_after_the_external_data_changed_in_place_drops_the_cached_ranges(corpus, tmp_path, capsys):
    """The project's own model file unchanged but its external .data weights retrained in place: retargeting onto
    it kept every cached range as 'same tensor' (ranges of the old weights' activations, as the recipe-choice
    cache did before it keyed on the .data files); they are dropped and calibrated again now."""
    from external_data_models import save_external

    cnn = corpus / "digits_cnn"
    save_external(cnn / "model_opset17.onnx", tmp_path / "m", 1.0)
    model, data = tmp_path / "m" / "m.onnx", tmp_path / "m" / "m.onnx.data"
    proj = tmp_path / "job.wbproj"
    assert cli.main(["quantize", str(model), "--data", str(cnn / "calib.npz"), "--samples", "32", "-o",
                     str(tmp_path / "a.onnx"), "--save-project", str(proj), "--no-auto", "--no-latency-check"]) == 0
    save_external(cnn / "model_opset17.onnx", tmp_path / "w3", 3.0)  # the same graph, weights x 3
    data.write_bytes((tmp_path / "w3" / "m.onnx.data").read_bytes())
    capsys.readouterr()
    out = tmp_path / "r.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(model), "--data", str(cnn / "calib.npz"),
                     "--samples", "32", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "0 ranges kept (same tensor)" in text and "(or its external data) changed" in text
    fresh = tmp_path / "fresh.onnx"
    assert cli.main(["quantize", str(model), "--data", str(cnn / "calib.npz"), "--samples", "32", "-o", str(fresh),
                     "--no-auto", "--no-latency-check"]) == 0
    assert out.read_bytes() == fresh.read_bytes()  # the retargeted model is the one a fresh job writes
