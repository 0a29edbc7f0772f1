"""onnx.checker's messages run over several lines (a node dumped inside, a line per node that failed shape
inference, a "==> Context:" paragraph). The reader's refusal quoted the whole text joined on one line, cut at
300 characters ("... for operator Relu ==> Context: Bad node spec for node. Name: r OpType: Relu Fix the
exporter ..."); it now quotes one line naming the node (errors.checker_line) and keeps the full text as the
error's details, which the app's dialog shows below and the CLI does not print."""

from __future__ import annotations

import onnx
import pytest
from checker_failures import CHECKER_FAILURES

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import ModelError, checker_line


def _checker_text(model) -> str:
    with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError)) as err:
        onnx.checker.check_model(model, full_check=True)
    return str(err.value)


@pytest.mark.parametrize("name", CHECKER_FAILURES)
def test_the_checkers_message_gives_one_line_naming_the_node(name):
    model, line = CHECKER_FAILURES[name]
    text = _checker_text(model)
    assert "\n" in text.strip() or name == "attribute value"  # what the line is made from runs over lines
    assert checker_line(text) == line


@pytest.mark.parametrize("name", CHECKER_FAILURES)
def test_opening_it_refuses_in_one_line_with_the_full_text_as_details(tmp_path, name):
    model, line = CHECKER_FAILURES[name]
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ModelError) as err:
        api.open_model(path)
    assert err.value.message == f"{path}: not a valid ONNX model: onnx.checker: {line}"
    assert err.value.hint == "Fix the exporter or re-export the model, then check it with onnx.checker."
    assert err.value.details == _checker_text(model).strip()


@pytest.mark.parametrize("verb", ["inspect", "quantize"])
def test_the_cli_prints_that_line_and_the_hint_only(tmp_path, capsys, verb):
    model, line = CHECKER_FAILURES["unknown attribute"]
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    before = path.read_bytes()
    argv = [verb, str(path)] + (["-o", str(tmp_path / "q.onnx")] if verb == "quantize" else [])
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.err.splitlines() == [f"error: {path}: not a valid ONNX model: onnx.checker: {line} Fix the exporter "
                                    "or re-export the model, then check it with onnx.checker."]
    assert "Traceback" not in out.out + out.err and "Context" not in out.err
    assert path.read_bytes() == before and not (tmp_path / "q.onnx").exists()
