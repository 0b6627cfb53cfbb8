"""Hugging Face backbones: ``hf:<id-or-local-dir>`` through ``AutoModel`` + ``output_hidden_states``.

Resolution never needs a hub: a local directory (``save_pretrained``) is loaded directly; an id is
looked up in the HF cache first (``HF_HOME`` / ``HF_HUB_CACHE``, read at call time), and only when
``HF_HUB_OFFLINE`` is unset is the hub tried afterwards. Preprocessing comes from the model's
``preprocessor_config.json`` (``AutoImageProcessor``), never from constants here.

Layer n is ``hidden_states[n]`` (``hidden_states[0]`` is the embedding output). Tokens beyond the
patch grid at the front of the sequence are prefix tokens (CLS, registers); 4-D hidden states
(HF CNNs) are flattened to tokens.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.probing.backbones import Backbone, Tokens
from sceneforge.probing.hub import hub_cache_dir, hub_usable, offline_error
from sceneforge.probing.preprocess import PIL_CODES, Preprocess

log = logging.getLogger(__name__)


class HFBackbone(Backbone):
    """A frozen ``transformers`` vision model."""

    def __init__(self, spec: str, model, preprocess: Preprocess, patch_size: int | None):
        super().__init__(spec, model, preprocess, num_layers=int(model.config.num_hidden_layers))
        self.patch_size = patch_size

    def _forward(self, x, layers: list[int]) -> dict[int, Tokens]:
        hidden = self.model(pixel_values=x, output_hidden_states=True).hidden_states
        return {n: self._split(hidden[n], x.shape[-2:]) for n in layers}

    def _split(self, t, hw) -> Tokens:
        if t.dim() == 4:
            b, c, h, w = t.shape
            patches = t.flatten(2).transpose(1, 2)
            return Tokens(patches, patches.new_zeros((b, 0, c)), (int(h), int(w)))
        gh, gw = _grid(t.shape[1], hw, self.patch_size)
        k = t.shape[1] - gh * gw
        return Tokens(t[:, k:], t[:, :k], (gh, gw))


def _grid(n_tokens: int, hw, patch_size: int | None) -> tuple[int, int]:
    if patch_size:
        gh, gw = int(hw[0]) // patch_size, int(hw[1]) // patch_size
        if gh * gw <= n_tokens:
            return gh, gw
    for k in range(0, 9):  # square grid with up to 8 prefix tokens
        side = int(round((n_tokens - k) ** 0.5))
        if side * side == n_tokens - k:
            return side, side
    raise ConfigError(f"cannot infer the patch grid from {n_tokens} tokens: unsupported architecture")


def create_hf(ident: str, weights: str | None, kwargs: dict) -> HFBackbone:
    """Load config, model and image processor; ``weights`` may be a local directory or "random"."""
    import torch

    source = weights if weights and weights != "random" else ident
    if weights and weights != "random" and not Path(weights).is_dir():
        raise ConfigError(f"--weights {weights}: for hf: backbones pass a save_pretrained directory")
    config = _load(ident, source, "AutoConfig", **kwargs)
    vision_config = getattr(config, "vision_config", None) or config
    if getattr(vision_config, "num_channels", None) is None and not hasattr(vision_config, "image_size"):
        raise ConfigError(f"--backbone hf:{ident}: unsupported architecture {config.model_type!r} (not a vision model)")
    torch.manual_seed(0)
    if weights == "random":
        from transformers import AutoModel

        model = AutoModel.from_config(config)
    else:
        model = _load(ident, source, "AutoModel", config=config)
    model = getattr(model, "vision_model", model)  # CLIP / SigLIP: the image tower only
    if not hasattr(model.config, "num_hidden_layers"):
        raise ConfigError(f"--backbone hf:{ident}: unsupported architecture {config.model_type!r} (no num_hidden_layers)")
    processor = _load(ident, source, "AutoImageProcessor")
    patch = getattr(model.config, "patch_size", None)
    return HFBackbone(
        f"hf:{ident}",
        model,
        _preprocess(processor, ident),
        int(patch[0] if isinstance(patch, (list, tuple)) else patch) if patch else None,
    )


def _load(ident: str, source: str, cls_name: str, **kwargs):
    """``<cls>.from_pretrained`` from a directory or the cache; hub only when allowed."""
    import transformers

    cls = getattr(transformers, cls_name)
    if Path(source).is_dir():
        _require_files(ident, Path(source), cls_name)
        try:
            return cls.from_pretrained(source, **kwargs)
        except (OSError, ValueError) as e:
            raise ConfigError(
                f"--backbone hf:{ident}: cannot load {cls_name} from {source} ({str(e).splitlines()[0][:200]})"
            ) from e
    try:
        return cls.from_pretrained(source, local_files_only=True, cache_dir=hub_cache_dir(), **kwargs)
    except (OSError, ValueError) as e:
        if not hub_usable():
            raise offline_error(f"hf:{ident}", e) from e
    try:
        return cls.from_pretrained(source, cache_dir=hub_cache_dir(), **kwargs)
    except Exception as e:
        raise offline_error(f"hf:{ident}", e) from e


# What from_pretrained reads from a save_pretrained directory (any one of each tuple).
_DIR_FILES = {
    "AutoConfig": (("config.json",), "the model config; save it with model.save_pretrained(dir)"),
    "AutoModel": (
        ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"),
        "the weights; save them with model.save_pretrained(dir)",
    ),
    "AutoImageProcessor": (
        ("preprocessor_config.json",),
        "the image preprocessing settings; save them with AutoImageProcessor.save_pretrained(dir)",
    ),
}


def _require_files(ident: str, directory: Path, cls_name: str) -> None:
    """Say which file a local directory lacks (transformers' own message is long and generic)."""
    names, why = _DIR_FILES.get(cls_name, ((), ""))
    if names and not any((directory / n).is_file() for n in names):
        raise ConfigError(f"--backbone hf:{ident}: {directory} has no {' or '.join(names)} ({why})")


def _preprocess(processor, ident: str) -> Preprocess:
    """Map an HF image processor's settings onto :class:`Preprocess`."""
    d = processor.to_dict()
    try:
        size = d.get("size") or {}
        crop = d.get("crop_size") if d.get("do_center_crop") else None
        kwargs = dict(
            mean=tuple(map(float, d["image_mean"])),
            std=tuple(map(float, d["image_std"])),
            interpolation=PIL_CODES.get(int(d.get("resample", 2)), "bilinear"),
        )
        if isinstance(size, int):
            size = {"shortest_edge": size}
        if "shortest_edge" in size:
            kwargs["resize_shorter"] = int(size["shortest_edge"])
        else:
            kwargs["resize_hw"] = (int(size["height"]), int(size["width"]))
        if crop:
            kwargs["crop_hw"] = (int(crop["height"]), int(crop["width"]))
        elif "resize_hw" not in kwargs:
            kwargs["crop_hw"] = (kwargs["resize_shorter"],) * 2
        return Preprocess(**kwargs)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"--backbone hf:{ident}: image processor config not understood ({type(e).__name__}: {e})") from e
