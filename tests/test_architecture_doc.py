"""docs/architecture.md stays true to the code: every package of the core's layers contract
(pyproject.toml) is on the page in the contract's order, every package and module of workbench/core is
in the contract, and the files and functions the page names exist."""

from __future__ import annotations

import ast
import fnmatch
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORE = REPO / "workbench" / "core"
DOC = REPO / "docs" / "architecture.md"
LAYERS_CONTRACT = "Core packages are layered: none imports one above it"


def contract_layers(pyproject: Path = REPO / "pyproject.toml") -> list[list[str]]:
    """The layers contract's layers, highest first, each a list of sibling package names."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["name"] == LAYERS_CONTRACT]
    return [[name.strip() for name in layer.split("|")] for layer in layers]


def core_packages(core: Path = CORE) -> set[str]:
    """Top-level packages and modules of ``core`` (``__init__.py`` excluded)."""
    packages = {p.name for p in core.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in core.glob("*.py") if p.stem != "__init__"}
    return packages | modules


def doc_layer_rows(text: str) -> list[list[str]]:
    """The packages of each row of the page's layer table (``| N | `a` \\| `b` | ... |``), in order."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"\|\s*\d+\s*\|(.*?[^\\])\|", line)
        if m:
            rows.append(re.findall(r"`([a-z_]+)`", m.group(1)))
    return rows


def _defined(path: Path) -> set[str]:
    """Names a module defines or imports at top level (and, for the facade, its lazily loaded names)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                    if t.id == "_LAZY" and isinstance(node.value, ast.Dict):
                        names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return names


def _module_file(base: Path, parts: list[str]) -> Path | None:
    path = base.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _roots() -> list[Path]:
    qt = REPO / "workbench" / "qt"
    return [REPO, CORE, REPO / "workbench", qt, qt / "canvas",
            *sorted(p for p in CORE.iterdir() if (p / "__init__.py").exists())]


def missing_references(text: str, repo: Path = REPO) -> list[str]:
    """Backquoted ``*.py`` names with no such file, and dotted names (``model.load.load_model``) whose
    module exists but does not define the last name. Project file fields (``model.path``) are not code."""
    tokens = set(re.findall(r"`([^`\s]+)`", text))
    files = [str(p.relative_to(repo)) for top in ("workbench", "tests", "benchmarks", "scripts")
             for p in (repo / top).rglob("*.py")]
    fields = (CORE / "pipeline" / "project.py").read_text()
    missing = []
    for token in sorted(tokens):
        if token.endswith(".py"):
            if not any(fnmatch.fnmatch(f, token) or fnmatch.fnmatch(f, f"*/{token}") for f in files):
                missing.append(token)
            continue
        parts = token.split(".")
        if len(parts) < 2 or not all(p.isidentifier() for p in parts) or f'"{token}"' in fields:
            continue
        found = []
        for root in _roots():
            for cut in range(len(parts), 0, -1):
                module = _module_file(root, parts[:cut])
                if module is not None:
                    found.append((module, parts[cut:]))
                    break
        if found and not any(not rest or rest[0] in _defined(module) for module, rest in found):
            missing.append(token)
    return missing


def test_every_layer_of_the_contract_is_on_the_page_in_order():
    rows = doc_layer_rows(DOC.read_text())
    assert rows == contract_layers(), "docs/architecture.md's layer table must list pyproject's layers contract"


def test_every_core_package_is_in_the_layers_contract():
    listed = {name for layer in contract_layers() for name in layer}
    assert core_packages() - listed == set(), "add the package to the layers contract and to docs/architecture.md"
    assert listed - core_packages() == set(), "the layers contract names a package that is gone"


def test_the_files_and_functions_the_page_names_exist():
    assert missing_references(DOC.read_text()) == []


def test_the_checks_catch_an_undocumented_package(tmp_path):
    core = tmp_path / "core"
    (core / "newpkg").mkdir(parents=True)
    (core / "newpkg" / "__init__.py").write_text("")
    (core / "api.py").write_text("")
    assert core_packages(core) == {"newpkg", "api"}
    text = DOC.read_text()
    assert doc_layer_rows(text.replace("| `report` |", "| `reports` |")) != contract_layers()
    assert missing_references(text + "\n`model.load.load_modell` `no_such_module.py`\n") == [
        "model.load.load_modell", "no_such_module.py"]
