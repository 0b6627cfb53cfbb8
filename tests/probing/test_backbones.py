"""Backbones: spec parsing, presets, token shapes per layer, real weight loading from local files,
preprocessing from the model's own config, and the offline error messages. Nothing downloads."""

from __future__ import annotations

import pytest
import torch

from sceneforge.core.errors import ConfigError
from sceneforge.probing.backbones import PRESETS, create_backbone, parse_spec

from conftest import TINY_VIT


@pytest.fixture
def empty_hf_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))


def tiny_vit(**extra):
    return create_backbone("timm:vit_small_patch16_224", weights="random", model_kwargs={**TINY_VIT, **extra})


def test_vit_tokens_per_layer_keep_patches_and_prefix_apart():
    bb = tiny_vit(reg_tokens=2)
    assert bb.num_layers == 3
    toks = bb.extract(torch.randn(2, 3, 32, 32), [1, 2, 3])
    assert sorted(toks) == [1, 2, 3]
    for t in toks.values():
        assert t.patches.shape == (2, 16, 32)  # 4x4 grid of 8-px patches
        assert t.prefix.shape == (2, 3, 32)  # CLS + 2 registers
        assert t.grid == (4, 4)
    assert not torch.equal(toks[1].patches, toks[3].patches)


def test_layer_n_is_output_of_block_n():
    bb = tiny_vit()
    x = torch.randn(1, 3, 32, 32)
    tokens = bb.extract(x, [2])[2]
    with torch.inference_mode():
        h = bb.model.patch_embed(x)
        h = bb.model._pos_embed(h)
        h = bb.model.norm_pre(h)
        for blk in bb.model.blocks[:2]:
            h = blk(h)
    assert torch.allclose(tokens.patches, h[:, 1:], atol=1e-5)
    assert torch.allclose(tokens.prefix, h[:, :1], atol=1e-5)


def test_cnn_feature_maps_become_tokens():
    bb = create_backbone("timm:resnet18", weights="random")
    toks = bb.extract(torch.randn(1, 3, 64, 64), [2, 5])
    assert toks[2].patches.shape == (1, 16 * 16, 64) and toks[2].prefix.shape == (1, 0, 64)
    assert toks[5].patches.shape == (1, 4, 512) and toks[5].grid == (2, 2)


def test_backbone_is_frozen():
    bb = tiny_vit()
    assert not bb.model.training
    assert not any(p.requires_grad for p in bb.model.parameters())


def test_resolve_layers():
    bb = tiny_vit()
    assert bb.resolve_layers(None) == [3]
    assert bb.resolve_layers([-1, 1, 1]) == [1, 3]
    with pytest.raises(ConfigError, match="out of range"):
        bb.resolve_layers([4])


def test_timm_weights_file_is_loaded(tmp_path):
    from safetensors.torch import save_file

    src = tiny_vit()
    with torch.no_grad():
        for p in src.model.parameters():
            p.add_(torch.randn_like(p))  # differ from the seeded random init
    path = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in src.model.state_dict().items()}, str(path))
    loaded = create_backbone("timm:vit_small_patch16_224", weights=str(path), model_kwargs=TINY_VIT)
    for k, v in src.model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[k], v), k
    assert loaded.weights_hash == src.weights_hash != tiny_vit().weights_hash


def test_timm_weights_that_do_not_fit_are_a_clear_error(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "wrong.safetensors"
    save_file({"foo": torch.zeros(3)}, str(path))
    with pytest.raises(ConfigError, match="does not fit timm:vit_small_patch16_224"):
        create_backbone("timm:vit_small_patch16_224", weights=str(path), model_kwargs=TINY_VIT)
    with pytest.raises(ConfigError, match="no such file"):
        create_backbone("timm:vit_small_patch16_224", weights=str(tmp_path / "none.safetensors"))


def test_preprocessing_comes_from_the_model_config():
    clip = create_backbone(
        "timm:vit_base_patch16_clip_224.openai", weights="random", model_kwargs={"depth": 1, "embed_dim": 32, "num_heads": 2}
    )
    assert clip.preprocess.mean == pytest.approx((0.48145466, 0.4578275, 0.40821073))
    assert clip.preprocess.input_hw == (224, 224)
    dino = tiny_vit()
    assert dino.preprocess.mean == pytest.approx((0.5, 0.5, 0.5))  # vit_small_patch16_224 (augreg)
    assert dino.preprocess.input_hw == (32, 32)  # follows img_size


def _save_tiny_hf(path, registers=0):
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    torch.manual_seed(1)
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8)
    model = ViTModel(cfg, add_pooling_layer=False)
    model.save_pretrained(path)
    ViTImageProcessor(
        size={"height": 32, "width": 32}, image_mean=[0.1, 0.2, 0.3], image_std=[0.4, 0.5, 0.6], resample=3
    ).save_pretrained(path)
    return model


def test_hf_local_directory_loads_weights_and_processor(tmp_path):
    src = _save_tiny_hf(tmp_path / "tiny")
    bb = create_backbone(f"hf:{tmp_path / 'tiny'}")
    for k, v in src.state_dict().items():
        assert torch.equal(bb.model.state_dict()[k], v), k
    assert bb.preprocess.mean == pytest.approx((0.1, 0.2, 0.3))
    assert bb.preprocess.std == pytest.approx((0.4, 0.5, 0.6))
    assert bb.preprocess.interpolation == "bicubic" and bb.preprocess.input_hw == (32, 32)
    toks = bb.extract(torch.randn(2, 3, 32, 32), [1, 2])
    assert toks[2].patches.shape == (2, 16, 32) and toks[2].prefix.shape == (2, 1, 32)
    with torch.inference_mode():
        ref = src(pixel_values=torch.ones(1, 3, 32, 32), output_hidden_states=True).hidden_states[2]
    assert torch.allclose(bb.extract(torch.ones(1, 3, 32, 32), [2])[2].patches, ref[:, 1:], atol=1e-5)


def test_offline_without_weights_is_a_clear_error(empty_hf_home):
    for spec in ("dinov2-vits14", "timm:vit_small_patch16_224.augreg_in21k", "hf:facebook/dinov2-base"):
        with pytest.raises(ConfigError, match="offline and no local weights for .*pass --weights or set HF_HOME"):
            create_backbone(spec)


def test_hf_cache_is_used_offline(tmp_path, empty_hf_home):
    """A model already in the HF cache (HF_HOME/hub/models--org--name) loads with the hub offline."""
    snap = tmp_path / "hf" / "hub" / "models--acme--tiny-vit"
    (snap / "refs").mkdir(parents=True)
    (snap / "refs" / "main").write_text("abc123")
    _save_tiny_hf(snap / "snapshots" / "abc123")
    bb = create_backbone("hf:acme/tiny-vit")
    assert bb.num_layers == 2 and bb.spec == "hf:acme/tiny-vit"


@pytest.mark.parametrize("spec", ["foo", "timm:", "onnx:model", "hf:"])
def test_bad_specs(spec):
    with pytest.raises(ConfigError, match="--backbone"):
        parse_spec(spec)


def test_unknown_timm_model():
    with pytest.raises(ConfigError, match="unknown timm model"):
        create_backbone("timm:vit_does_not_exist")


def test_hf_non_vision_model_is_unsupported(tmp_path):
    from transformers import BertConfig

    BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64).save_pretrained(tmp_path)
    with pytest.raises(ConfigError, match="unsupported architecture"):
        create_backbone(f"hf:{tmp_path}")


@pytest.mark.parametrize("name", sorted(n for n, s in PRESETS.items() if s.startswith("timm:")))
def test_timm_presets_name_real_timm_models(name):
    import timm

    assert timm.is_model(PRESETS[name].split(":", 1)[1])


@pytest.mark.parametrize(
    "spec, kwargs, prefix",
    [
        ("dinov3-vits16", {"depth": 2, "embed_dim": 64, "num_heads": 2, "img_size": 64}, 5),  # EVA family
        ("timm:convnext_atto", {}, 0),  # CNN stages
    ],
)
def test_other_timm_families(spec, kwargs, prefix):
    bb = create_backbone(spec, weights="random", model_kwargs=kwargs)
    h, w = bb.preprocess.input_hw
    toks = bb.extract(torch.randn(1, 3, h, w), [1, bb.num_layers])
    last = toks[bb.num_layers]
    assert last.prefix.shape[1] == prefix
    assert last.patches.shape[1] == last.grid[0] * last.grid[1]


def test_dinov2_presets_build_at_224_and_load_518_weights(tmp_path):
    """timm's DINOv2 weights are 518² (37x37 position embeddings); the preset builds a 224² model
    and the checkpoint filter resamples them, so 224² images are not upsampled."""
    from safetensors.torch import save_file

    small = {"depth": 1, "embed_dim": 32, "num_heads": 2}
    src = create_backbone("timm:vit_small_patch14_dinov2.lvd142m", weights="random", model_kwargs=small)
    assert src.preprocess.input_hw == (518, 518)
    path = tmp_path / "dinov2.safetensors"
    save_file({k: v.contiguous() for k, v in src.model.state_dict().items()}, str(path))
    bb = create_backbone("dinov2-vits14", weights=str(path), model_kwargs=small)
    assert bb.preprocess.input_hw == (224, 224)
    assert bb.extract(torch.randn(1, 3, 224, 224), [1])[1].grid == (16, 16)
    assert torch.equal(bb.model.state_dict()["blocks.0.attn.qkv.weight"], src.model.state_dict()["blocks.0.attn.qkv.weight"])


def _save_dinov2_reg(path):
    from transformers import BitImageProcessor, Dinov2WithRegistersConfig, Dinov2WithRegistersModel

    cfg = Dinov2WithRegistersConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=28,
        patch_size=14,
        num_register_tokens=4,
    )
    Dinov2WithRegistersModel(cfg).save_pretrained(path)
    BitImageProcessor(
        size={"shortest_edge": 32},
        crop_size={"height": 28, "width": 28},
        do_center_crop=True,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    ).save_pretrained(path)
    return (28, 28), 4, 5, (32, 28)


def _save_clip(path):
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    CLIPModel(
        CLIPConfig(text_config=small, vision_config=dict(small, image_size=32, patch_size=8), projection_dim=16)
    ).save_pretrained(path)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(path)
    return (32, 32), 16, 1, (32, 32)


@pytest.mark.parametrize("save", [_save_dinov2_reg, _save_clip], ids=["dinov2-registers", "clip"])
def test_hf_families_registers_and_image_tower(tmp_path, save):
    hw, patches, prefix, (shorter, crop) = save(tmp_path / "m")
    bb = create_backbone(f"hf:{tmp_path / 'm'}")
    assert bb.preprocess.resize_shorter == shorter and bb.preprocess.input_hw == (crop, crop)
    tok = bb.extract(torch.randn(1, 3, *hw), [2])[2]
    assert tok.patches.shape[1] == patches and tok.prefix.shape[1] == prefix  # CLS (+ 4 registers)
