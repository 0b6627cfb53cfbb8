"""Issue 47 items 4 and 7: every probe argument is checked before any work, in one line with a
suggestion where one exists, exit 2, and nothing is written under --out; no torch is imported to
say so (a missing --data took 22 s, a bad --backbone or --layers 99 came after 44-50 s of layout
baselines and left OUT/layout.jsonl behind)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.probing.config import ProbeConfig
from sceneforge.probing.validate import check_backbone, check_probe_config, known_depth

from conftest import make_image_dataset


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_image_dataset(tmp_path_factory.mktemp("d"), envs=("desert",), n=(8, 4, 4))


def cli(tmp_path, *argv) -> tuple[int, list[str], bool]:
    """Run ``sceneforge probe`` in a fresh process: exit code, stderr lines, whether torch was imported."""
    code = (
        "import sys\nfrom sceneforge.cli import main\nrc = main(sys.argv[1:])\n"
        "print('torch imported' if 'torch' in sys.modules else 'no torch', file=sys.stderr)\nsys.exit(rc)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "probe", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    lines = r.stderr.strip().splitlines()
    return r.returncode, lines[:-1], lines[-1] == "torch imported"


@pytest.mark.parametrize(
    "flags, expected",
    [
        (
            ["--backbone", "dinov5-vits14"],
            "--backbone 'dinov5-vits14': not a preset nor timm:<name>, hf:<name>; did you mean 'dinov2-vits14'",
        ),
        (["--backbone", "tim:vit_small_patch16_224"], "did you mean 'timm:vit_small_patch16_224'?"),
        (["--backbone", "vits14-random", "--layers", "99"], "--layers: 99 out of range for timm:vit_small_patch14_dinov2 (1..12"),
        (["--backbone", "dinov2-vitl14", "--layers", "25"], "(1..24, or -1 for the last)"),
        (["--backbone", "vits14-random", "--weights", "nope.safetensors"], "--weights nope.safetensors: no such file"),
        (["--backbone", "vits14-random", "--data", "no_such_dir"], "--data no_such_dir: no such file or directory"),
        (["--backbone", "vits14-random", "--heads", "linear,linaer"], "got ('linear', 'linaer'); did you mean 'linear'?"),
        (["--backbone", "vits14-random", "--protocol", "leoe"], "did you mean 'loeo'?"),
    ],
)
def test_a_bad_argument_is_one_line_before_any_work_and_without_torch(tmp_path, data, flags, expected):
    argv = ["--data", str(data), "--out", "out", *flags]
    t0 = time.perf_counter()
    rc, err, torch_imported = cli(tmp_path, *argv)
    assert rc == 2 and len(err) == 1 and err[0].startswith("sceneforge probe: error: "), err
    assert expected in err[0], err
    assert not torch_imported and not (tmp_path / "out").exists()
    assert time.perf_counter() - t0 < 60  # a bound on a fresh process, not a speed target


def test_a_layer_only_the_built_model_can_check_still_writes_nothing(tmp_path, data):
    """An arbitrary timm name's depth is known only once built: the layer is refused right after
    the backbone is built, before the layout baselines write layout.jsonl."""
    pytest.importorskip("timm")
    from sceneforge.probing.sweep import run_probe

    out = tmp_path / "out"
    cfg = ProbeConfig.from_dict(
        {
            "data": str(data),
            "backbone": "timm:resnet18",
            "weights": "random",
            "layers": "9",
            "out": str(out),
            "quiet": True,
            "min_test": 0,
        }
    )
    with pytest.raises(ConfigError, match=r"--layers: 9 out of range for timm:resnet18 \(1\.\.\d"):
        run_probe(cfg)
    assert not out.exists() or not any(out.iterdir())


def test_depths_from_names_and_model_args():
    assert known_depth("timm:vit_small_patch14_dinov2") == 12
    assert known_depth("timm:vit_large_patch16_dinov3.lvd1689m") == 24
    assert known_depth("hf:facebook/dinov2-base") == 12 and known_depth("hf:openai/clip-vit-base-patch16") == 12
    assert known_depth("timm:vit_small_patch16_224", {"depth": 3}) == 3
    assert known_depth("timm:resnet50.a1_in1k") is None and known_depth("hf:/some/dir") is None


def test_the_library_runs_the_same_checks(tmp_path, data):
    cfg = ProbeConfig.from_dict({"data": str(data), "backbone": "dinov5-vits14", "out": str(tmp_path / "o")})
    with pytest.raises(ConfigError, match="did you mean 'dinov2-vits14'"):
        check_probe_config(cfg)
    assert check_backbone("dinov2-vits14") == "timm:vit_small_patch14_dinov2.lvd142m"
    assert check_backbone("hf:facebook/dinov2-base") == "hf:facebook/dinov2-base"
