"""Package layout (everything else is in pyproject.toml).

The repository keeps one folder per concern at the top level (core/, engine/, scenarios/,
assets_manifest/, probing/, renderfarm/, and sceneforge/ for the CLI), but installs them all under
the one ``sceneforge`` namespace: ``engine/`` is imported as ``sceneforge.engine``. Generic
top-level names such as ``core`` or ``engine`` would clash with a user's own modules or another
install (issue 35). The mapping is computed, so a new sub-package needs no edit here.
"""

from setuptools import find_namespace_packages, setup

LIBRARY = ("core", "engine", "scenarios", "assets_manifest", "probing", "renderfarm", "explorer", "study")

# namespace discovery, as pyproject's [tool.setuptools.packages.find] does: data-only folders
# (scenarios/envs, assets_manifest/packs) are packages too, so package-data reaches them
EXCLUDE = ["*.__pycache__", "*.__pycache__.*"]
packages = find_namespace_packages(include=["sceneforge", "sceneforge.*"], exclude=EXCLUDE)
packages += [
    f"sceneforge.{p}"
    for p in find_namespace_packages(include=[f"{top}{tail}" for top in LIBRARY for tail in ("", ".*")], exclude=EXCLUDE)
]
setup(packages=packages, package_dir={f"sceneforge.{top}": top for top in LIBRARY})
