"""A project whose ``evaluation`` section a hand edit broke is refused at open, in one line naming the field.

``"metric": "top-1"`` opened with the Evaluate panel showing "(none)" (no metric of that name), and
``"metirc": "top1"`` opened with the metric dropped, neither said. Now both are refused like any other invalid
field, and the work open before stays.
"""

from __future__ import annotations

from cli_projects import MODEL, digits_folder, read_json, refused_open, write_variant

from workbench.qt.commands import push_edit, set_exclude

THIRD = "/f/f.3/Conv"
HINT = "Fix the field, or set it again in the app's Evaluate panel and re-save."


def test_a_misspelt_evaluation_field_or_metric_is_refused_naming_it(
    qtbot, window, open_file, corpus, tmp_path, dialogs, save_prompts
):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    window.evaluate_panel.settings.samples.setValue(9)  # an evaluation section the project saves
    base = window.save_project_to(folder / "p.wbproj")
    assert read_json(base)["evaluation"] == {"data": "eval.npz", "metric": "top1", "samples": 9}
    assert push_edit(window.doc, set_exclude(window.doc.recipe, [THIRD], True), f"Keep {THIRD} in float")
    recipe, evaluation, edits = (
        window.doc.recipe.to_json(),
        window.doc.evaluation,
        window.doc.undo_stack.count(),
    )
    cases = [
        (
            write_variant(
                base,
                base.with_name("metric.wbproj"),
                evaluation={"data": "eval.npz", "metric": "top-1", "samples": 9},
            ),
            "evaluation.metric: unknown metric 'top-1' (did you mean 'top1'?); use one of top1, cosine, "
            "output_sqnr, detection_scores, or the path of a .py file defining metric(outputs, batch)",
        ),
        (
            write_variant(
                base,
                base.with_name("key.wbproj"),
                evaluation={"data": "eval.npz", "metirc": "top1", "samples": 9},
            ),
            "evaluation.metirc: unknown field 'metirc' (did you mean 'metric'?)",
        ),
    ]
    save_prompts.answer = "discard"
    for project, field in cases:
        # failed before: opened, the Evaluate panel on "(none)"
        assert refused_open(qtbot, window, project, dialogs) == [
            ("Workbench", f"{project}: invalid project field {field}.\n\n{HINT}")
        ]
        assert window.status_label.text() == f"Could not open {project.name}. {MODEL} is still open."
        assert window.doc.recipe.to_json() == recipe and window.doc.evaluation == evaluation
        assert (
            window.doc.undo_stack.count() == edits and window.doc.modified and window.doc.project_path == base
        )


def test_an_evaluation_section_of_another_metric_still_opens(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    base = window.save_project_to(folder / "p.wbproj")
    project = write_variant(
        base,
        base.with_name("cosine.wbproj"),
        evaluation={"data": "eval.npz", "metric": "cosine", "samples": None},
    )
    open_file(window, project)
    assert window.doc.project_path == project
    assert window.evaluate_panel.settings.metric_spec() == "cosine"
    assert window.doc.evaluation == {"data": str(folder / "eval.npz"), "metric": "cosine", "samples": None}
