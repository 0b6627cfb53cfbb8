"""The study config: what a valid one becomes, and one clear line (exit 2) for each bad field."""

from __future__ import annotations

import pytest
import yaml

from sceneforge.core.errors import ConfigError
from sceneforge.study.config import StudyConfig, load_study_config
from study_helpers import run_study

MINIMAL = {
    "backbones": [{"name": "vit-tiny", "backbone": "timm:vit_tiny_patch16_224", "weights": "random"}],
    "environments": ["desert", "city"],
    "tasks": ["ego", "allo"],
    "n": 400,
    "layers": [6],
    "heads": ["linear", "abmilp", "efficient"],
    "epochs": 3,
}


def test_the_issue_minimal_config_is_valid_and_plans_one_dataset_per_env_and_task():
    cfg = StudyConfig.from_dict(MINIMAL, "s.yaml")
    assert cfg.warmup == 0 and cfg.patience == 40 and cfg.layers == (6,)
    assert [e.name for e in cfg.entries()] == ["vit-tiny"]  # already random: no twin
    gen = cfg.generate_config("city", "allo")
    assert gen["envs"] == ["city"] and gen["tasks"] == ["allo"] and gen["n"] == 400
    assert "camera_policy" not in gen  # the data policy is generate's default unless the config says otherwise


def test_a_pretrained_backbone_gets_a_random_twin_unless_turned_off():
    raw = dict(
        MINIMAL,
        backbones=[{"name": "d", "backbone": "dinov2-s-imgfocus"}, {"backbone": "efficientnet-lite0", "random_control": False}],
    )
    names = [(e.name, e.kind, e.weights) for e in StudyConfig.from_dict(raw, "s.yaml").entries()]
    assert names == [("d", "model", None), ("d-random", "random", "random"), ("efficientnet-lite0", "model", None)]
    assert [e.name for e in StudyConfig.from_dict(dict(raw, random_control=False), "s").entries()] == ["d", "efficientnet-lite0"]


def test_the_protocol_fingerprint_follows_training_not_backbones_or_reports():
    a = StudyConfig.from_dict(MINIMAL, "s")
    assert a.protocol_fingerprint() == StudyConfig.from_dict(dict(MINIMAL, reports=False, n=50), "s").protocol_fingerprint()
    # where the features live is not how heads train: a study may switch keep_features and resume
    assert a.keep_features and not StudyConfig.from_dict(dict(MINIMAL, keep_features=False), "s").keep_features
    assert a.protocol_fingerprint() == StudyConfig.from_dict(dict(MINIMAL, keep_features=False), "s").protocol_fingerprint()
    assert a.protocol_fingerprint() != StudyConfig.from_dict(dict(MINIMAL, epochs=4), "s").protocol_fingerprint()


@pytest.mark.parametrize(
    "change, words",
    [
        ({"epochs": 0}, "s.yaml: epochs must be an integer in [1, inf], got 0"),
        ({"colour": 1}, "unknown field(s) colour"),
        ({"tasks": ["sideways"]}, "tasks must be one of"),
        ({"layers": "deep"}, "layers must be 'auto' or 1-based block numbers"),
        ({"n_train": [0]}, "n_train must be integers >= 1"),
        ({"lrs": [0]}, "lrs must be numbers in (0, 10)"),
        ({"backbones": [{"backbone": "nope:x"}]}, "backbones[0]: backbone 'nope:x'"),
        ({"backbones": [{"backbone": "timm:a", "size": 3}]}, "backbones[0]: unknown key(s) size"),
        ({"backbones": [{"backbone": "timm:a", "name": "a/b"}]}, "name must be letters"),
        ({"backbones": [{"backbone": "timm:a"}, {"backbone": "timm:a"}]}, "names must be unique"),
        ({"data": {"camera_policy": "nonsense"}}, "camera_policy must be one of"),
        ({"data": {"n": 5}}, "data.n is set by the study"),
        ({"datasets": ["x"]}, "give exactly one"),
        ({"keep_features": "no"}, "s.yaml: keep_features must be true or false, got 'no'"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(change, words, tmp_path):
    raw = dict(MINIMAL, **change)
    with pytest.raises(ConfigError) as e:
        StudyConfig.from_dict(raw, "s.yaml")
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_command_says_it_in_one_line_and_exits_2(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text(yaml.safe_dump(dict(MINIMAL, epochs=-1)))
    r = run_study(str(bad), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "epochs must be an integer" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()  # nothing partial
    bad.write_text("backbones: [\n")
    r = run_study(str(bad), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "not valid YAML" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = run_study(str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "no such study config file" in r.stderr


def test_weights_and_datasets_are_relative_to_the_config_file(tmp_path):
    (tmp_path / "w.safetensors").write_bytes(b"")
    (tmp_path / "cfg").mkdir()
    raw = dict(MINIMAL, backbones=[{"backbone": "timm:vit_tiny_patch16_224", "weights": "../w.safetensors"}])
    del raw["environments"]
    raw["datasets"] = ["../data/desert_ego"]
    path = tmp_path / "cfg" / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    cfg = load_study_config(path)
    assert cfg.backbones[0].weights == str(tmp_path / "w.safetensors")
    assert cfg.datasets == (str(tmp_path / "data" / "desert_ego"),)


@pytest.mark.parametrize(
    "args, words",
    [
        (["merge", "--out", "x"], "merge needs at least one source"),
        (["a.yaml", "b.yaml", "--out", "x"], "expected one study config, got 2"),
        (["report"], "report takes one study directory"),
        (["report", "nowhere"], "not a `sceneforge study` output directory"),
        (["a.yaml"], "--out is required"),
    ],
)
def test_usage_errors_are_one_line(args, words):
    r = run_study(*args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


def test_missing_weights_are_refused_before_any_work(tmp_path):
    cfg = tmp_path / "s.yaml"
    raw = {"backbones": [{"name": "m", "backbone": "timm:vit_tiny_patch16_224", "weights": "nope.safetensors"}]}
    cfg.write_text(yaml.safe_dump(dict(raw, datasets=[str(tmp_path)], layers=[1])))
    r = run_study(str(cfg), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "backbone m: weights" in r.stderr and "no such file or directory" in r.stderr
    assert not (tmp_path / "out").exists()
