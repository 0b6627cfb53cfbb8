"""timm backbones: ``timm:<name>[.<tag>]`` through ``timm.create_model`` and ``forward_intermediates``.

ViT-family models return patch tokens and prefix (CLS/register) tokens separately
(``return_prefix_tokens=True``, ``output_fmt="NLC"``); CNNs and hierarchical models return NCHW
maps, flattened here to (B, H*W, C) tokens with no prefix. ``stop_early=True`` skips blocks after
the deepest requested layer, so shallow layers are cheaper to extract.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.probing.backbones import Backbone, Tokens, parse_spec
from sceneforge.probing.checkpoints import load_file
from sceneforge.probing.hub import hub_cache_dir, hub_offline, hub_usable, offline_error
from sceneforge.probing.preprocess import Preprocess
from sceneforge.probing.registry import PRESETS

log = logging.getLogger(__name__)


class TimmBackbone(Backbone):
    """A frozen timm model; layers are 1-based indices into ``model.feature_info``."""

    def __init__(self, spec: str, model, preprocess: Preprocess):
        super().__init__(spec, model, preprocess, num_layers=len(model.feature_info))
        params = inspect.signature(model.forward_intermediates).parameters
        self._vit = "return_prefix_tokens" in params

    def _forward(self, x, layers: list[int]) -> dict[int, Tokens]:
        idx = [n - 1 for n in layers]
        if self._vit:
            outs = self.model.forward_intermediates(
                x, indices=idx, return_prefix_tokens=True, output_fmt="NLC", norm=False, stop_early=True, intermediates_only=True
            )
            grid = tuple(int(g) for g in self._grid(x))
            return {n: Tokens(p, pre, grid) for n, (p, pre) in zip(layers, outs)}
        outs = self.model.forward_intermediates(x, indices=idx, stop_early=True, intermediates_only=True)
        return {n: _flatten_nchw(o) for n, o in zip(layers, outs)}

    def _grid(self, x) -> tuple[int, int]:
        pe = self.model.patch_embed
        if hasattr(pe, "dynamic_feat_size"):
            return pe.dynamic_feat_size(tuple(x.shape[-2:]))
        ph, pw = pe.patch_size
        return x.shape[-2] // ph, x.shape[-1] // pw


def _flatten_nchw(t) -> Tokens:
    b, c, h, w = t.shape
    patches = t.flatten(2).transpose(1, 2)
    return Tokens(patches, patches.new_zeros((b, 0, c)), (int(h), int(w)))


def create_timm(name: str, weights: str | None, kwargs: dict) -> TimmBackbone:
    """Create, load weights, freeze; preprocessing from ``resolve_data_config`` of the model."""
    import timm
    import torch

    if not timm.is_model(name):
        raise ConfigError(
            f"--backbone timm:{name}: unknown timm model (see timm.list_models(); e.g. timm:vit_small_patch14_dinov2.lvd142m)"
        )
    kwargs.setdefault("num_classes", 0)
    torch.manual_seed(0)  # random init ("random" weights, new heads) is reproducible
    model = _create_model(timm, name, weights, kwargs)
    if not hasattr(model, "forward_intermediates") or not getattr(model, "feature_info", None):
        raise ConfigError(
            f"--backbone timm:{name}: unsupported architecture (no forward_intermediates/feature_info in this timm version)"
        )
    return TimmBackbone(f"timm:{name}", model, _preprocess(timm, model))


def meta_timm(name: str, kwargs: dict) -> TimmBackbone | None:
    """The architecture of ``timm:<name>`` on torch's ``meta`` device: no weights, nothing
    allocated, built in ~0.2 s; what a plan needs (depth, token shapes through
    :func:`probing.features.layer_shapes`) without loading or downloading anything. None where
    timm cannot build it so (an unknown name, a model that needs real tensors to construct)."""
    import timm
    import torch

    if not timm.is_model(name):
        return None
    try:
        with torch.device("meta"):
            model = timm.create_model(name, pretrained=False, **{"num_classes": 0, **kwargs})
        if not hasattr(model, "forward_intermediates") or not getattr(model, "feature_info", None):
            return None
        bb = TimmBackbone(f"timm:{name}", model, _preprocess(timm, model))
    except Exception as e:  # noqa: BLE001 - any construction failure: the plan falls back and says so
        log.debug("timm:%s on the meta device: %s", name, e)
        return None
    bb.device = "meta"
    return bb


def shape_backbone(spec: str, model_kwargs: dict | None = None) -> Backbone | None:
    """``spec``'s architecture without weights (:func:`meta_timm`; a preset's own model arguments
    applied, as :func:`probing.backbones.create_backbone` does): its depth and, through
    :func:`probing.features.layer_shapes`, every layer's token shapes, for a plan (``sceneforge
    study --plan``). timm specs only; None for other kinds (``hf:`` needs its config) or where the
    model cannot be built so."""
    kind, name = parse_spec(spec)
    if kind != "timm":
        return None
    preset = PRESETS.get(spec.strip())
    bb = meta_timm(name, {**(preset.kwargs if preset else {}), **(model_kwargs or {})})
    if bb is not None and preset:
        bb.spec = preset.name
    return bb


def _create_model(timm, name: str, weights: str | None, kwargs: dict):
    if weights == "random":
        return timm.create_model(name, pretrained=False, **kwargs)
    if weights:
        path = Path(weights).expanduser()
        if not path.is_file():
            raise ConfigError(f"--weights {weights}: no such file")
        model = timm.create_model(name, pretrained=False, **kwargs)
        load_file(timm, model, path, f"--weights {weights}")
        return model
    cached = _cached_weights(timm, name)
    if cached:
        model = timm.create_model(name, pretrained=False, **kwargs)
        load_file(timm, model, Path(cached), f"cached weights {cached}")
        return model
    if not hub_usable():
        why = "HF_HUB_OFFLINE is set" if hub_offline() else "hub unreachable"
        raise offline_error(f"timm:{name}", FileNotFoundError(f"not in HF cache {hub_cache_dir()}; {why}"))
    try:
        return timm.create_model(name, pretrained=True, **kwargs)
    except Exception as e:  # hub unreachable: huggingface_hub, urllib, OSError ...
        raise offline_error(f"timm:{name}", e) from e


def _cached_weights(timm, name: str) -> str | None:
    """The weights file of ``name`` in the local HF cache, if timm's config names a hub repo."""
    from huggingface_hub import try_to_load_from_cache

    cfg = timm.models.get_pretrained_cfg(name)
    repo = getattr(cfg, "hf_hub_id", None) if cfg else None
    if not repo:
        return None
    names = [getattr(cfg, "hf_hub_filename", None), "model.safetensors", "pytorch_model.bin"]
    for fname in filter(None, names):
        found = try_to_load_from_cache(repo, fname, cache_dir=hub_cache_dir())
        if isinstance(found, str):
            return found
    return None


def _preprocess(timm, model) -> Preprocess:
    """Model's own data config; the input size follows ``img_size`` if the model was built with one."""
    cfg = dict(timm.data.resolve_data_config({}, model=model))
    pe = getattr(model, "patch_embed", None)
    img_size = getattr(pe, "img_size", None)
    if img_size:
        cfg["input_size"] = (3, int(img_size[0]), int(img_size[1]))
    return Preprocess.from_timm(cfg)
