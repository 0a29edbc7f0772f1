"""A metric .py file's bad return value (a string, a list, several values, NaN) or exception is refused in
one line naming the file (evaluate printed "metric ...: float nan quantized nan" and exit 0; autotune
searched on NaN and ended "target NOT met"); numbers, numpy scalars and +-inf pass as floats."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core import api
from workbench.core.errors import DataError


def _metric(tmp_path, body: str):
    path = tmp_path / "my_metric.py"
    path.write_text("import numpy as np\n\ndef metric(outputs, batch):\n    return " + body + "\n")
    return path, api.load_metric(str(path), allow_code=True)


@pytest.mark.parametrize("body, says", [
    ("'abc'", "returned 'abc', not one number"),
    ("[1, 2]", "returned [1, 2], not one number"),
    ("np.array([0.5, 0.7])", "returned array([0.5, 0.7]), not one number"),
    ("True", "returned True, not one number"),
    ("None", "returned None, not one number"),
    ("float('nan')", "returned NaN"),
    ("1 / 0", "raised ZeroDivisionError: division by zero"),
])
def test_bad_value_names_the_file(tmp_path, body, says):
    path, fn = _metric(tmp_path, body)
    with pytest.raises(DataError) as info:
        fn({"y": np.zeros(3)}, {})
    assert info.value.message.startswith(f"{path}: metric(outputs, batch) {says}")


@pytest.mark.parametrize("body, value", [("0.25", 0.25), ("np.float32(0.5)", 0.5), ("np.array(3)", 3.0),
                                         ("float('inf')", math.inf), ("np.array([[0.75]])", 0.75)])
def test_numbers_pass_as_floats(tmp_path, body, value):
    _, fn = _metric(tmp_path, body)
    got = fn({"y": np.zeros(3)}, {})
    assert type(got) is float and got == value


@pytest.mark.parametrize("body, hint", [
    ("open('/nonexistent/charset.txt')", "It could not open a file it reads (named in brackets): make that path "
                                         "exist or set what the message in brackets says."),
    ("1 / 0", "Fix the error in the file."),
])
def test_import_error_hint_fits_the_error(tmp_path, body, hint):
    # a metric file whose import cannot find a file it reads (the README's ppocr_rec_exact.py without the
    # corpus) was told "Fix the error in the file.", though the file is right and a setting is missing
    path = tmp_path / "reads_a_file.py"
    path.write_text(f"DATA = {body}\n\ndef metric(outputs, batch):\n    return 0.0\n")
    with pytest.raises(DataError, match="importing the metric file failed") as err:
        api.load_metric(str(path), allow_code=True)
    assert err.value.hint == hint
