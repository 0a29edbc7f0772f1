"""An edit made while a job or a load runs is never thrown away when it ends.

Found by a bug hunt: Export and Choose Recipe pushed the recipe they had built from the recipe at their
start over the user's later edit (the status even said "the latency check kept 0 units float"), and a
model opening in the background replaced a document edited while it loaded, without asking."""

from __future__ import annotations

from latency_fakes import fixed_latency, quantized_faster

from workbench.core import api
from workbench.qt.commands import push_edit, set_exclude, set_role_field

EMBED, ATTN = "/embed/MatMul", "/enc/layers.0/self_attn/MatMul_1"


def int16(win, nodes: list[str]) -> None:
    assert push_edit(win.doc, set_role_field(win.doc.recipe, nodes, "activation", "dtype", "int16"), "int16")


def excluded(recipe) -> set[str]:
    return {n for n, o in recipe.overrides.items() if o.exclude}


def run(qtbot, win, start, then) -> list:
    """``start()`` a job, ``then()`` at once (while it runs); returns the (kind, result) it succeeded with."""
    seen: list = []
    win.runs.succeeded.connect(lambda kind, res: seen.append((kind, res)))
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        start()
        assert win.runs.busy
        then()
    return seen


def test_an_edit_made_while_exporting_is_kept(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    """digits_cnn: the latency check keeps nothing float; the export reverted the edit all the same."""
    quantized_faster(monkeypatch)  # measured, its first Conv and its AveragePool are kept float
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.calibration.samples.setValue(8)
    seen = run(qtbot, win, lambda: win.export_to(tmp_path / "q.onnx"), lambda: int16(win, ["/f/f.3/Conv"]))
    assert [k for k, _ in seen] == ["export"]
    assert win.doc.recipe.overrides["/f/f.3/Conv"].activation.dtype == "int16"
    status = win.status_label.text()
    assert "0 units" not in status
    assert status.endswith("The file has the recipe as it was when the export started: your edits made since are not "
                           "in it (export again to include them).")
    stack = win.doc.undo_stack
    assert stack.text(stack.count() - 1) == "int16" and not any(stack.text(i).startswith("Keep")
                                                                 for i in range(stack.count()))


def test_the_latency_check_float_units_are_added_to_an_edit_made_while_exporting(qtbot, window, open_file, corpus,
                                                                                  tmp_path, monkeypatch):
    """digits_transformer: the latency check keeps attention MatMuls float; they are added on top of the
    edit, except on a unit the edit changed. (The measurements are fixed: each probed unit slower, the model
    faster quantized.)"""
    fixed_latency(monkeypatch)
    win = window
    open_file(win, corpus / "digits_transformer" / "model_opset17.onnx")
    win.calibration.samples.setValue(16)
    started = win.doc.recipe.model_copy(deep=True)
    seen = run(qtbot, win, lambda: win.export_to(tmp_path / "q.onnx"), lambda: int16(win, [EMBED, ATTN]))
    (kind, res), = seen
    kept = excluded(api.Recipe.model_validate_json(res["recipe"])) - excluded(started)
    assert len(kept) == 4  # the check kept the 4 attention MatMuls float
    recipe = win.doc.recipe
    assert recipe.overrides[EMBED].activation.dtype == "int16" and recipe.overrides[ATTN].activation.dtype == "int16"
    assert excluded(recipe) == kept - {ATTN}
    status = win.status_label.text()
    assert f"The latency check kept {len(kept - {ATTN})} unit" in status and "added to your edited recipe" in status
    assert (f"Not added for {ATTN}: you changed it while the export ran." in status) == (ATTN in kept)
    win.act_undo.trigger()  # the latency edit alone
    assert excluded(win.doc.recipe) == set() and win.doc.recipe.overrides[EMBED].activation.dtype == "int16"


def test_an_edit_made_while_choosing_a_recipe_is_kept(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_transformer" / "model_opset17.onnx")
    seen = run(qtbot, win, win.start_choice,
               lambda: push_edit(win.doc, set_exclude(win.doc.recipe, ["/cls/Gemm"], True), "exclude"))
    (kind, res), = seen
    assert kind == "choose" and res["chosen"] == "compute+mse"  # a recipe the window would have pushed
    assert win.doc.recipe.overrides["/cls/Gemm"].exclude is True and win.doc.recipe.op_types != ["MatMul", "Gemm"]
    status = win.status_label.text()
    assert status.startswith("Recipe choice: compute+mse (output SQNR on ")
    assert status.endswith("not applied: the recipe was edited while the choice ran, and that edit is kept. "
                           "Choose Recipe again to choose for the edited recipe.")
    stack = win.doc.undo_stack
    assert [stack.text(i) for i in range(stack.count())][-1:] == ["exclude"]
    assert not any(stack.text(i).startswith("Choose recipe") for i in range(stack.count()))


def test_edits_made_while_another_model_loads_are_offered_to_save(qtbot, window, open_file, corpus, save_prompts):
    win = window
    first, other = corpus / "digits_cnn" / "model_opset17.onnx", corpus / "digits_cnn" / "model_opset13.onnx"
    open_file(win, first)
    save_prompts.answer = "cancel"
    win.open_path(other)  # nothing unsaved: no prompt; the load runs in the background
    assert save_prompts == [] and win._open_job is not None
    assert push_edit(win.doc, set_exclude(win.doc.recipe, ["/f/f.3/Conv"], True), "exclude")
    qtbot.waitUntil(lambda: win._open_job is None, timeout=300_000)
    assert save_prompts == [("digits_cnn/model_opset17.onnx", "opening model_opset13.onnx (it finished loading after these edits)")]
    assert win.doc.model_path == first and win.doc.recipe.overrides["/f/f.3/Conv"].exclude is True
    assert win.doc.modified and win.status_label.text() == (
        "model_opset13.onnx was not opened: model_opset17.onnx was edited while it loaded, and those edits are kept.")
    save_prompts.answer = "discard"
    with qtbot.waitSignals([win.modelOpened, win.canvas.layoutReady], timeout=300_000):
        win.open_path(other)  # asked before the load: discarded, nothing edited meanwhile
    assert len(save_prompts) == 2 and win.doc.model_path == other and not win.doc.modified
