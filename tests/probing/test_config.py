"""ProbeConfig: one validated config from a YAML file, the command line or Python."""

from __future__ import annotations

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.probing.config import ProbeConfig
from sceneforge.cli import build_parser
from sceneforge.commands.probe import config_from_args
from sceneforge.probing.registry import HEADS

REQUIRED = {"data": "d", "backbone": "timm:vit_small_patch16_224", "out": "o"}


def test_lists_and_comma_strings_mean_the_same():
    a = ProbeConfig.from_dict(
        {
            **REQUIRED,
            "heads": ["linear", "efficient"],
            "layers": [6, 9, 12],
            "lrs": [0.01, 0.001],
            "model_arg": ["img_size=224", "num_classes=0"],
        }
    )
    b = ProbeConfig.from_dict(
        {
            **REQUIRED,
            "heads": "linear,efficient",
            "layers": "6,9,12",
            "lrs": "1e-2,1e-3",
            "model-arg": {"img_size": 224, "num_classes": 0},
        }
    )
    assert a == b
    assert a.layers == (6, 9, 12) and a.model_arg == {"img_size": 224, "num_classes": 0}
    assert a.heads == ("linear", "efficient") and a.train.lrs == (0.01, 0.001)


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"epoch": 3}, "--config p.yaml: unknown field(s) epoch; known: data, backbone"),
        (
            {"heads": ["linear", "nosuchhead"]},
            f"--config p.yaml: heads must be one of {tuple(HEADS)}, got ('linear', 'nosuchhead')",
        ),
        ({"heads": ""}, "--config p.yaml: heads must name at least one, got ()"),
        ({"epochs": 0}, "--config p.yaml: epochs must be an integer in [1, inf], got 0"),
        ({"epochs": 2.5}, "--config p.yaml: epochs must be an integer in [1, inf], got 2.5"),
        ({"epochs": "x"}, "--config p.yaml: epochs must be an integer in [1, inf], got 'x'"),
        ({"seed": -1}, "--config p.yaml: seed must be an integer in [0, inf], got -1"),
        ({"layers": "6,x"}, "--config p.yaml: layers '6,x'"),
        ({"dropouts": [1.5]}, "--config p.yaml: dropouts [1.5]: expected comma-separated numbers in [0, 1)"),
        ({"cls": "yes"}, "--config p.yaml: cls 'yes': expected true or false"),
        ({"epochs": 5, "warmup": 6}, "--config p.yaml: warmup must be <= epochs (5), got 6"),
        ({"model_arg": ["img_size"]}, "model_arg 'img_size': expected KEY=VALUE"),
    ],
)
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


# --- one name per thing (issue 35 item 5): ProbeConfig is the job; old names warn once -----------------
def test_probe_config_is_the_job_and_probejob_its_old_spelling(caplog):
    """``ProbeJob(...)`` (the old second description of the same fields) still builds the job: a
    ProbeConfig equal to the one from the new keys, with one deprecation line."""
    from sceneforge.probing.sweep import ProbeJob
    from sceneforge.probing.train import TrainConfig

    new = ProbeConfig.from_dict(
        {
            **REQUIRED,
            "layers": [6, 12],
            "heads": ["linear"],
            "model_arg": {"img_size": 224},
            "protocol": ["within", "loeo"],
            "cache": "c",
            "extract_batch": 8,
            "quiet": True,
            "epochs": 10,
            "warmup": 2,
            "runs": 2,
            "cls": True,
            "sparrta_schedule": True,
        }
    )
    with caplog.at_level("WARNING"):
        old = ProbeJob(
            **REQUIRED,
            layers=[6, 12],
            heads=("linear",),
            model_kwargs={"img_size": 224},
            protocols=("within", "loeo"),
            cache_dir="c",
            batch_size=8,
            progress=False,
            train=TrainConfig(
                epochs=10,
                warmup=2,
                runs=2,
                use_cls=True,
                epochs_by_head={"linear": (1000, 200), "abmilp": (500, 100), "efficient": (500, 100)},
            ),
        )
    assert old == new and old.train == new.train
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "ProbeJob(...)" in lines[0] and "deprecated" in lines[0]
    with pytest.raises(ConfigError, match="train.weight_decay 0.1: not a probe config field"):
        ProbeJob(**REQUIRED, train=TrainConfig(weight_decay=0.1))
    with caplog.at_level("WARNING"):
        assert new.job() is new  # the old accessor
    assert "ProbeConfig.job() is deprecated" in caplog.records[-1].getMessage()


def test_no_progress_is_the_old_name_of_quiet(tmp_path, caplog):
    cfg_file = tmp_path / "probe.yaml"
    cfg_file.write_text("data: d\nbackbone: x\nout: o\nno_progress: true\n")
    with caplog.at_level("WARNING"):
        cfg = config_from_args(build_parser().parse_args(["probe", "--config", str(cfg_file)]))
    assert cfg.quiet is True
    lines = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
    assert lines == [f"--config {cfg_file}: 'no_progress' is deprecated, write 'quiet' (the old name still works for now)"]
    cfg_file.write_text("data: d\nbackbone: x\nout: o\nno_progress: true\nquiet: false\n")
    with pytest.raises(ConfigError, match="give quiet only \\(no_progress is its old name\\)"):
        config_from_args(build_parser().parse_args(["probe", "--config", str(cfg_file)]))
    caplog.clear()
    with caplog.at_level("WARNING"):
        old = config_from_args(
            build_parser().parse_args(["probe", "--data", "d", "--backbone", "x", "--out", "o", "--no-progress"])
        )
    assert old.quiet is True and len(caplog.records) == 1
    assert "'--no-progress' is deprecated, write '--quiet'" in caplog.records[0].getMessage()
    new = config_from_args(build_parser().parse_args(["probe", "--data", "d", "--backbone", "x", "--out", "o", "--quiet"]))
    assert new == old
