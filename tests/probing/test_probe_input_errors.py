"""Issue 13 item 11 (probing side): a truncated JPEG names its file; a Hugging Face directory
without ``preprocessor_config.json`` says what is missing (it was cut mid-sentence)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.probing.preprocess import Preprocess, load_batch


def test_truncated_jpeg_names_the_file(tmp_path):
    good, bad = tmp_path / "good.jpg", tmp_path / "img_0007.jpg"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(good)
    bad.write_bytes(good.read_bytes()[:400])
    pre = Preprocess(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), interpolation="bicubic", resize_hw=(32, 32))
    assert load_batch([str(good)], pre).shape == (1, 3, 32, 32)
    with pytest.raises(ConfigError) as ei:
        load_batch([str(good), str(bad)], pre)
    msg = str(ei.value)
    assert msg.startswith(f"{bad}: cannot read image") and "\n" not in msg
    with pytest.raises(ConfigError, match="missing.jpg: cannot read image"):
        load_batch([str(tmp_path / "missing.jpg")], pre)


def test_hf_directory_without_preprocessor_config_says_what_is_missing(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from sceneforge.probing.backbones import create_backbone

    torch.manual_seed(1)
    cfg = transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8
    )
    d = tmp_path / "tiny"
    transformers.ViTModel(cfg, add_pooling_layer=False).save_pretrained(d)
    with pytest.raises(ConfigError) as ei:
        create_backbone(f"hf:{d}")
    msg = str(ei.value)
    assert f"{d} has no preprocessor_config.json" in msg and "AutoImageProcessor.save_pretrained" in msg
    assert "\n" not in msg and msg.endswith(")")
    (d / "config.json").unlink()
    with pytest.raises(ConfigError, match="has no config.json"):
        create_backbone(f"hf:{d}")
