"""The package layering of docs/interfaces.md, enforced: no module imports a package above it.

Every ``import``/``from`` statement (module level and inside functions) of every library module
is parsed with :mod:`ast`; an import of a higher layer fails the test with file:line.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package -> packages it may import (besides itself and third-party code)
ALLOWED = {
    "core": set(),
    "assets_manifest": {"core"},
    "engine": {"core", "assets_manifest"},
    "scenarios": {"core", "assets_manifest", "engine"},
    "renderfarm": {"core", "engine", "scenarios"},  # runs scenarios (contract in scenarios.contract)
    "probing": {"core"},
    "sceneforge": {"core", "assets_manifest", "engine", "scenarios", "renderfarm", "probing"},
}
OURS = set(ALLOWED)


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


def test_no_upward_imports():
    bad = []
    for pkg, allowed in ALLOWED.items():
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for line, top in _imports(path):
                if top in OURS and top != pkg and top not in allowed:
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_engine_server_only_main_imports_the_asset_package():
    """The server gets its asset catalogue handed in by its entry point."""
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "engine").rglob("*.py")
             if any(top == "assets_manifest" for _, top in _imports(p))]
    assert users == ["engine/server/main.py"]


@pytest.mark.parametrize("pkg", sorted(OURS - {"sceneforge"}))
def test_library_never_imports_the_cli(pkg):
    for path in (ROOT / pkg).rglob("*.py"):
        assert all(top != "sceneforge" for _, top in _imports(path)), path
