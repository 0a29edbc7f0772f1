"""sha256 of every corpus model quantized by the CLI: QDQ export, project, and QONNX from the project.

For each ONNX file of ``../shared/corpus`` (or ``--corpus DIR``) this runs, with the default preset
and all calibration rows::

    workbench-cli quantize MODEL --data calib.npz -o OUT/NAME.qdq.onnx --save-project OUT/NAME.wbproj --no-search
    workbench-cli quantize OUT/NAME.wbproj --format qonnx -o OUT/NAME.qonnx.onnx

and records the sha256 of both model files (or the refusal's exit status for models the CLI refuses,
such as an already-quantized file). ``--write FILE`` stores the table as JSON; ``--check FILE``
compares with a stored table and exits 1 on any difference, so a change that must keep outputs
byte-identical (a restructure) can be checked by anyone::

    python scripts/output_hashes.py --write before.json            # on the old tree
    python scripts/output_hashes.py --check before.json            # on the new tree
    python scripts/output_hashes.py --check before.json --replay OLD_OUT   # old projects still replay

``--replay DIR`` re-runs the QONNX step from the projects saved in DIR by an earlier run (projects
written by the old code must still open and give the same bytes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parent.parent / "shared" / "corpus"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def corpus_models(corpus: Path) -> list[tuple[str, Path, Path]]:
    """(name, model file, calib.npz) for every ONNX file of the corpus manifest, in a fixed order."""
    manifest = json.loads((corpus / "manifest.json").read_text())
    out = []
    for entry in manifest["models"]:
        rel = entry.get("path") or entry.get("file")
        model = corpus / rel if not Path(rel).is_absolute() else Path(rel)
        if not model.exists():
            model = corpus / "models" / rel
        name = model.parent.name + "_" + model.stem
        out.append((name, model, model.parent / "calib.npz"))
    return sorted(out)


def cli(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


def no_search_flag() -> list[str]:
    """``--no-search`` where the CLI has it: the hashes pin the recipe as given, not the searched one
    (a tree from before the recipe search has no such flag and never searches)."""
    helptext = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", "--help"],
                              capture_output=True, text=True).stdout
    return ["--no-search"] if "--no-search" in helptext else []


def run(corpus: Path, out: Path, replay: Path | None) -> dict[str, str]:
    table: dict[str, str] = {}
    flag = no_search_flag()
    for name, model, calib in corpus_models(corpus):
        qdq, proj, qonnx = out / f"{name}.qdq.onnx", out / f"{name}.wbproj", out / f"{name}.qonnx.onnx"
        rc = cli("quantize", str(model), "--data", str(calib), "-o", str(qdq), "--save-project", str(proj), *flag)
        table[f"{name}.qdq"] = sha256(qdq) if rc == 0 else f"exit {rc}"
        source = (replay / proj.name) if replay else proj
        rc = cli("quantize", str(source), "--format", "qonnx", "-o", str(qonnx)) if source.exists() else -1
        table[f"{name}.qonnx"] = sha256(qonnx) if rc == 0 else f"exit {rc}"
        print(f"{name}: {table[name + '.qdq'][:16]} {table[name + '.qonnx'][:16]}", flush=True)
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, help="keep the outputs here (default: a temporary folder)")
    ap.add_argument("--write", type=Path, help="store the table as JSON")
    ap.add_argument("--check", type=Path, help="compare with a stored table; exit 1 on a difference")
    ap.add_argument("--replay", type=Path, help="folder of projects from an earlier run to replay")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        table = run(args.corpus, out, args.replay)
    if args.write:
        args.write.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    if args.check:
        want = json.loads(args.check.read_text())
        diff = sorted(k for k in set(want) | set(table) if want.get(k) != table.get(k))
        for k in diff:
            print(f"DIFFERS {k}: {want.get(k)} -> {table.get(k)}")
        print(f"{len(table) - len(diff)}/{len(table)} identical")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
