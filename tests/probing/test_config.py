"""ProbeConfig: one validated config from a YAML file, the command line or Python."""
from __future__ import annotations

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.probing.config import ProbeConfig
from sceneforge.cli import build_parser
from sceneforge.commands.probe import config_from_args

REQUIRED = {"data": "d", "backbone": "timm:vit_small_patch16_224", "out": "o"}


def test_lists_and_comma_strings_mean_the_same():
    a = ProbeConfig.from_dict({**REQUIRED, "heads": ["linear", "efficient"], "layers": [6, 9, 12],
                               "lrs": [0.01, 0.001], "model_arg": ["img_size=224", "num_classes=0"]})
    b = ProbeConfig.from_dict({**REQUIRED, "heads": "linear,efficient", "layers": "6,9,12",
                               "lrs": "1e-2,1e-3", "model-arg": {"img_size": 224, "num_classes": 0}})
    assert a == b
    assert a.layers == (6, 9, 12) and a.model_arg == {"img_size": 224, "num_classes": 0}
    job = a.job()
    assert job.layers == [6, 9, 12] and job.heads == ("linear", "efficient") and job.train.lrs == (0.01, 0.001)


@pytest.mark.parametrize("raw, message", [
    ({"epoch": 3}, "--config p.yaml: unknown key 'epoch'"),
    ({"heads": ["linear", "mlp"]}, "--config p.yaml: heads ['linear', 'mlp']: expected a comma list of"),
    ({"epochs": 0}, "--config p.yaml: epochs 0: expected integer(s) >= 1"),
    ({"epochs": 2.5}, "--config p.yaml: epochs 2.5"),
    ({"layers": "6,x"}, "--config p.yaml: layers '6,x'"),
    ({"dropouts": [1.5]}, "--config p.yaml: dropouts [1.5]: expected comma-separated numbers in [0, 1)"),
    ({"cls": "yes"}, "--config p.yaml: cls 'yes': expected true or false"),
    ({"epochs": 5, "warmup": 6}, "--config p.yaml: warmup 6: must be <= epochs (5)"),
    ({"model_arg": ["img_size"]}, "model_arg 'img_size': expected KEY=VALUE"),
])
def test_bad_values_are_one_line_naming_file_and_key(raw, message):
    with pytest.raises(ConfigError) as e:
        ProbeConfig.from_dict({**REQUIRED, **raw}, "p.yaml")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_missing_required_field():
    with pytest.raises(ConfigError, match="--backbone is required"):
        ProbeConfig.from_dict({"data": "d", "out": "o"})


def test_flags_override_the_file_and_defaults_fill_the_rest(tmp_path):
    cfg_file = tmp_path / "probe.yaml"
    cfg_file.write_text("data: d\nbackbone: x\nepochs: 40\nheads: [linear]\ncls: true\nbatch-size: 64\n")
    args = build_parser().parse_args(["probe", "--config", str(cfg_file), "--out", "o", "--epochs", "10"])
    cfg = config_from_args(args)
    assert (cfg.epochs, cfg.warmup, cfg.heads, cfg.cls, cfg.batch_size) == (10, 2, ("linear",), True, 64)
    assert (cfg.lrs, cfg.dropouts, cfg.runs, cfg.extract_batch) == ((1e-2, 1e-3, 1e-4), (0.2, 0.4, 0.6), 1, 64)
