"""``sceneforge study``: many backbones probed across environments and tasks into one leaderboard.

The one package that both generates datasets (through :mod:`renderfarm`) and probes them
(through :mod:`probing`'s public functions): it sits above both (tests/test_layering.py). Modules:
``config`` (the validated YAML), ``results`` (rows, header, merge), ``run`` (the resumable
study), ``leaderboard`` (csv, md, html, plots). docs/study.md describes the whole.
"""
