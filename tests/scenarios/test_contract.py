"""The scenario contract (issue 51 item 1): a scenario is a registered class whose config is parsed
once per process, and whose environment files are read once per job, however many steps run."""

from __future__ import annotations

import json

import pytest

from sceneforge import cli
from sceneforge.assets_manifest import schema
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import Scenario, get_scenario
from sceneforge.scenarios.sparrta.config import SparrtaConfig
from sceneforge.scenarios.vqa.scenario import VqaConfig


def _count_calls(monkeypatch, owner, name: str) -> list:
    """Count the calls of ``owner.name`` (the real function still runs)."""
    calls, real = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.render
@pytest.mark.parametrize(
    "argv, config_cls",
    [
        (["generate", "--env", "desert", "--task", "both", "--n", "2"], SparrtaConfig),
        (["vqa", "--env", "desert", "--n", "2", "--min-objects", "2", "--max-objects", "3"], VqaConfig),
    ],
)
def test_a_small_job_parses_its_config_and_environment_once(argv, config_cls, tmp_path, monkeypatch, capsys):
    """Before: a 4-sample sparrta job parsed its config 4 times and desert.yaml 10 times (every step
    re-parsed the dict, every ``units_of`` rebuilt the environment). Now the CLI parses once, the
    runner builds the scenario on that object, and the environment's YAML is parsed once."""
    checks = _count_calls(monkeypatch, config_cls, "check")  # runs once per real parse (from_dict)
    yaml_parses = _count_calls(monkeypatch, schema, "read_yaml_text")  # load_env's parse of an env file
    from sceneforge.scenarios.world import environments

    monkeypatch.setattr(environments, "_SPECS", {})  # as in a new process
    out = tmp_path / "out"
    assert cli.main([*argv, "--out", str(out), "--backend", "inline", "--quiet", "--no-fetch"]) == 0
    capsys.readouterr()
    assert len(checks) == 1, f"{config_cls.__name__} parsed {len(checks)} times"
    env_parses = [a for a in yaml_parses if str(a[1]).endswith("desert.yaml")]
    assert len(env_parses) == 1, f"desert.yaml parsed {len(env_parses)} times"
    assert json.loads((out / "job.json").read_text())["scenario"] in ("scenarios.sparrta", "scenarios.vqa.scenario")


def test_a_scenario_is_built_on_its_parsed_config_without_parsing_again(monkeypatch):
    cls = get_scenario("sparrta")
    cfg = SparrtaConfig.from_dict({"envs": ["desert"], "n": 4})
    checks = _count_calls(monkeypatch, SparrtaConfig, "check")
    job = cls(cfg)
    assert job.config is cfg and not checks
    plan = job.plan()
    assert plan.n_samples == 4 and job.server_spec().renderer == "gl" and not checks
    assert cfg.env("desert") is cfg.env("desert")  # one environment object per config
    assert cls({"envs": ["desert"], "n": 4}).plan().fingerprint == plan.fingerprint and len(checks) == 1


def test_a_bad_config_is_one_line_naming_the_field():
    with pytest.raises(ConfigError, match=r"^config: n must be an integer in \[1, inf\], got 0"):
        get_scenario("sparrta")({"n": 0})


def test_the_base_class_is_the_contract():
    class Half(Scenario):
        NAME = "half"

    assert Half.path() == __name__ and Half.NEEDS_SERVER is True
    job = Half({"n": 1})  # no Config: the dict is kept as it is (test toys)
    assert job.config == {"n": 1} and job.server_spec().assets == ()
    with pytest.raises(NotImplementedError):
        job.plan()
