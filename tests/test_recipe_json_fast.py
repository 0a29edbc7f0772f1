"""A recipe file whose values pydantic keeps as given is read without pydantic (Record.model_validate_json):
the same records, field by field and set fields at every level, as pydantic's JSON validation gives; any other
text (a value pydantic coerces or refuses, JSON the two readers could read differently) still goes to pydantic,
with its result or its error. A CLI quantize with such a recipe file loads no pydantic (it cost 0.09-0.15 s of
CPU a job: the import and the generated models)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from qdq_helpers import save_matmul_model

from workbench.core.recipe import record
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.record import _from_model

ROOT = Path(__file__).resolve().parent.parent

#: read without pydantic
PLAIN = [
    '{"preset": "cpu-u8s8", "rules": [{"name": "*", "activation": {"observer": "percentile"}}]}',
    '{"preset": "cpu-u8s8", "rules": [{"op_type": "Conv", "weight": {"granularity": "per_channel", "axis": 0}}], '
    '"overrides": {"b": {"exclude": true}, "a": {"activation": {"observer": "percentile", '
    '"observer_args": {"percentile": 99.9}}}}, "exclude": ["x*"]}',
    '{"smoothquant": {"alpha": 0.25}, "bias_correction": true, "op_types": ["Conv", "MatMul"]}',
    '{"reduce_range": true, "target": "qonnx", "rules": [{"op_type": "MatMul", "weight": {"dtype": "int4"}}]}',
    '{"overrides": {"n1": {"weight": null, "activation": {"symmetric": false, "power_of_two": true}}}}',
    *[p.read_text() for p in sorted((ROOT / "examples" / "recipes").glob("*.json"))],
]

#: left to pydantic: it coerces these (an int where a float goes, a list where a tuple goes) ...
COERCED = [
    '{"rules": [{"name": "*", "activation": {"observer": "percentile", "observer_args": {"percentile": 99}}}]}',
    '{"smoothquant": {"alpha": 0.5, "op_types": ["Conv"]}}',
    '{"rules": [{"name": "a"}], "rules": [{"name": "b"}]}',  # a repeated key
    '{"exclude": ["\\ud83d\\ude00"]}',  # an escaped surrogate pair (an emoji)
]
#: ... or refuses them
REFUSED = [
    '{"rules": [{"name": "*", "activation": {"observer": "percentile", "observer_args": {"percentile": NaN}}}]}',
    '{"smoothquant": {"alpha": 1e400}}',
    '{"exclude": ["\\ud800"]}',  # a lone surrogate: Python's JSON reader keeps it
    '{"rules": [{"name": "*", "activation": {"observr": "percentile"}}]}',
    '{"rules": [{"name": "*", "activation": {"symmetric": "yes"}}]}',
    '{"target": "qdq", "rules": [{"op_type": "MatMul", "weight": {"dtype": "int3"}}]}',
    '{"preset": "cpu-u8s8",}',
    '[{"preset": "cpu-u8s8"}]',
]


def _fast_read(text: str):
    """The recipe built from ``text`` without pydantic, or record._NOT_FAST when it is left to pydantic."""
    doc = record._plain_json(text)
    return Recipe._from_json_doc(doc) if type(doc) is dict else record._NOT_FAST


def _pydantic_read(text: str) -> Recipe:
    return _from_model(Recipe._pydantic_model().model_validate_json(text))


def _errors(exc: ValidationError) -> list[tuple]:
    return [(e["type"], e["loc"], e["msg"]) for e in exc.errors()]


def _set_fields(value):
    """Each record as its type and set fields (nested records too), to compare fields_set at every level."""
    if isinstance(value, record.Record):
        return type(value).__name__, sorted(value._fields_set), {k: _set_fields(v) for k, v in value}
    if isinstance(value, dict):
        return {k: _set_fields(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_set_fields(v) for v in value]
    return type(value).__name__, value


@pytest.mark.parametrize("text", PLAIN)
def test_a_plain_recipe_is_built_without_pydantic_as_pydantic_builds_it(text, monkeypatch):
    expected = _pydantic_read(text)
    assert _fast_read(text) is not record._NOT_FAST

    def no_pydantic(*_a, **_k):
        raise AssertionError("pydantic model asked for")

    with monkeypatch.context() as m:
        m.setattr(record.models, "model_of", no_pydantic)
        got = Recipe.model_validate_json(text)
    assert got == expected
    assert _set_fields(got) == _set_fields(expected)
    assert got.model_dump_json(indent=2, exclude_defaults=True) == expected.model_dump_json(indent=2,
                                                                                           exclude_defaults=True)


@pytest.mark.parametrize("text", COERCED)
def test_values_pydantic_coerces_are_left_to_it(text):
    assert _fast_read(text) is record._NOT_FAST
    got, expected = Recipe.model_validate_json(text), _pydantic_read(text)
    assert got == expected and _set_fields(got) == _set_fields(expected)


@pytest.mark.parametrize("text", REFUSED)
def test_values_pydantic_refuses_give_its_error(text):
    assert _fast_read(text) is record._NOT_FAST
    with pytest.raises(ValidationError) as got:
        Recipe.model_validate_json(text)
    with pytest.raises(ValidationError) as expected:
        _pydantic_read(text)
    assert _errors(got.value) == _errors(expected.value)


def test_a_quantize_with_a_plain_recipe_file_loads_no_pydantic(tmp_path):
    model = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    np.savez(tmp_path / "x.npz", X=np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    recipe = tmp_path / "hist.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8",
                                  "rules": [{"name": "*", "activation": {"observer": "percentile"}}]}))
    probe = ("import json, sys\nfrom workbench.cli import main\nrc = main(sys.argv[1:])\n"
             "print(json.dumps({'rc': rc, 'pydantic': 'pydantic' in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", probe, "quantize", str(model), "-o", str(tmp_path / "q.onnx"),
                          "--data", str(tmp_path / "x.npz"), "--recipe", str(recipe), "--no-latency-check", "--no-auto"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last == {"rc": 0, "pydantic": False}, out.stderr
