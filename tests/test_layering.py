"""The package layering of docs/interfaces.md, enforced: no module imports a package above it.

Every ``import``/``from`` statement (module level and inside functions) of every library module
is parsed with :mod:`ast`; an import of a higher layer fails the test with file:line. The library
installs under one namespace (``engine/`` is ``sceneforge.engine``: setup.py), so an import by
the folder's bare name (``import engine``) is an error anywhere in the repository: it would load
a second copy of the module from the working directory, or a user's own ``engine``.
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
    "explorer": {"core"},  # reads finished datasets from disk (sceneforge browse)
    # generates datasets (renderfarm runs the sparrta scenario) and probes them (probing): above both
    "study": {"core", "assets_manifest", "engine", "scenarios", "renderfarm", "probing"},
    "sceneforge": {"core", "assets_manifest", "engine", "scenarios", "renderfarm", "probing", "explorer", "study"},
}
OURS = set(ALLOWED)
LIBRARY = OURS - {"sceneforge"}


def _package(module: str) -> str | None:
    """Which of our packages ``module`` is in (``sceneforge.engine.world`` -> ``engine``;
    ``sceneforge.cli`` -> ``sceneforge``, the CLI); ``BARE engine`` for a bare library name."""
    parts = module.split(".")
    if parts[0] == "sceneforge":
        return parts[1] if len(parts) > 1 and parts[1] in LIBRARY else "sceneforge"
    return f"BARE {parts[0]}" if parts[0] in LIBRARY else None


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, _package(a.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "sceneforge":  # from sceneforge import engine
                for a in node.names:
                    yield node.lineno, _package(f"sceneforge.{a.name}")
            else:
                yield node.lineno, _package(node.module)


def _in_venv(path: Path) -> bool:
    """A file of a virtual environment inside the checkout (``python -m venv .venv`` there, the usual
    place): installed packages are not the project's code (torch ships files only Python 3.12 parses)."""
    return any((ROOT / d / "pyvenv.cfg").is_file() for d in path.relative_to(ROOT).parents if d != Path("."))


def test_no_bare_library_imports():
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {top[5:]} (write sceneforge.{top[5:]})"
        for path in sorted(ROOT.rglob("*.py"))
        if not {".git", "build", ".pytest_cache"} & set(path.parts) and not _in_venv(path)
        for line, top in _imports(path)
        if top and top.startswith("BARE ")
    ]
    assert not bad, "bare imports of the library:\n" + "\n".join(bad)


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
    users = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "engine").rglob("*.py")
        if any(top == "assets_manifest" for _, top in _imports(p))
    ]
    assert users == ["engine/server/main.py"]


@pytest.mark.parametrize("pkg", sorted(OURS - {"sceneforge"}))
def test_library_never_imports_the_cli(pkg):
    for path in (ROOT / pkg).rglob("*.py"):
        assert all(top != "sceneforge" for _, top in _imports(path)), path
