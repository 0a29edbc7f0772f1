"""A calibration cache given back on undo is of the rows as they are now: a data folder whose file was written
again in place is other rows.

The document keeps the cache of the rows it leaves, keyed by the data spec, the samples and the data path's
modification time and size, and gives it back when those rows return. For a folder (.npy / .npz files, or
images) that stamp was the folder's own: writing one of its files again in place leaves the folder's mtime
and size as they were, so the undo gave back the ranges of the old values.
"""

from __future__ import annotations

import os

import numpy as np

from workbench.qt.document import Document


def _folder(tmp_path, name: str = "calib"):
    folder = tmp_path / name
    folder.mkdir()
    for i in range(2):
        np.save(folder / f"part{i}.npy", np.full((4, 3), float(i), np.float32))
    return folder


def test_a_folder_file_written_again_gives_no_cache_back(qtbot, tmp_path):
    folder, other = _folder(tmp_path), _folder(tmp_path, "other")
    doc = Document()
    spec = {"kind": "folder", "path": str(folder)}
    doc.set_data(spec, None)
    cache = {"samples_seen": 8}
    doc.calibration = cache
    doc.set_data({"kind": "folder", "path": str(other)}, None)
    assert doc.calibration is None
    doc.set_data(dict(spec), None)  # the rows as they were: their cache back
    assert doc.calibration is cache

    doc.set_data({"kind": "folder", "path": str(other)}, None)
    part = folder / "part1.npy"
    before = os.stat(folder)
    np.save(part, np.full((4, 3), 7.0, np.float32))  # same shape and size, other values, written in place
    stat = part.stat()
    os.utime(part, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = os.stat(folder)
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)  # the folder's own stamp
    doc.set_data(dict(spec), None)
    assert doc.calibration is None  # failed before: the cache of the old values


def test_an_image_in_a_subfolder_written_again_gives_no_cache_back(qtbot, tmp_path):
    folder = tmp_path / "images"
    (folder / "a").mkdir(parents=True)
    image = folder / "a" / "x.png"
    image.write_bytes(b"\x89PNG old")
    doc = Document()
    spec = {"kind": "images", "path": str(folder)}
    doc.set_data(spec, 4)
    cache = {"samples_seen": 4}
    doc.calibration = cache
    doc.set_data(spec, 8)
    doc.set_data(spec, 4)
    assert doc.calibration is cache
    doc.set_data(spec, 8)
    image.write_bytes(b"\x89PNG new")
    stat = image.stat()
    os.utime(image, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    doc.set_data(spec, 4)
    assert doc.calibration is None  # failed before: the cache of the old image


def test_a_python_reader_gets_no_cache_back(qtbot, tmp_path):
    # the reader reads a file of its own choosing: rewritten, the .py's stamp stays, so its rows cannot be stamped
    reader = tmp_path / "reader.py"
    reader.write_text("import numpy as np\n\ndef samples():\n    yield {'x': np.load('rows.npy')}\n")
    doc = Document()
    spec = {"kind": "python", "path": str(reader), "allow_code": True}
    doc.set_data(spec, 4)
    doc.calibration = {"samples_seen": 4}
    doc.set_data(spec, 8)
    doc.set_data(spec, 4)
    assert doc.calibration is None  # failed before: the cache of whatever rows.npy held then
