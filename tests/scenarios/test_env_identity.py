"""An environment is its file's content, everywhere (issue 13 item 1).

The config records each environment's YAML and sha256; workers rebuild environments from that
text, never by looking a name up, so new names work with workers and a file named like a shipped
environment is never swapped for the shipped one.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.world.environments import env_path, freeze_envs, load_frozen_env
from sceneforge.scenarios.sparrta.config import parse_config

HARBOR = """\
name: harbor
ground: {color: [40, 90, 160]}
triples:
  - {id: rock_truck, source: rock, target: truck}
sampling: {sigma_cm: 400}
"""


def test_a_new_name_loads_from_the_recorded_content_even_after_the_file_is_gone(tmp_path):
    path = tmp_path / "harbor.yaml"
    path.write_text(HARBOR)
    frozen = freeze_envs([str(path)])
    assert list(frozen) == ["harbor"] and frozen["harbor"]["sha256"] == hashlib.sha256(HARBOR.encode()).hexdigest()
    path.unlink()  # a Ray node without the file
    env = load_frozen_env(frozen, "harbor")
    assert env.name == "harbor" and env.spec.ground.color == (40, 90, 160)
    assert load_frozen_env(frozen, str(path)).name == "harbor"  # also by the reference it was given as


def test_a_file_named_like_a_shipped_env_is_never_swapped_for_it(tmp_path):
    red = env_path("desert").read_text().replace("name: desert", "name: desert\n# red variant", 1)
    (tmp_path / "desert.yaml").write_text(red)
    mine = parse_config({"envs": [str(tmp_path / "desert.yaml")]})
    shipped = parse_config({"envs": ["desert"]})
    assert mine.env_files["desert"]["yaml"] == red
    assert mine.fingerprint() != shipped.fingerprint()
    assert parse_config(json.loads(json.dumps(mine.to_dict()))).env_files["desert"]["yaml"] == red  # a worker's view


def test_two_environments_with_one_name_and_damaged_records_are_refused(tmp_path):
    (tmp_path / "a.yaml").write_text(HARBOR)
    (tmp_path / "b.yaml").write_text(HARBOR)
    with pytest.raises(ConfigError, match="two environments are named 'harbor'"):
        freeze_envs([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")])
    d = parse_config({"envs": [str(tmp_path / "a.yaml")]}).to_dict()
    d["env_files"]["harbor"]["yaml"] += "\n# edited"
    with pytest.raises(ConfigError, match="env_files is damaged"):
        parse_config(d)


@pytest.mark.render
def test_generate_a_new_environment_with_two_workers(tmp_path):
    from sceneforge.renderfarm import run_job

    path = tmp_path / "harbor.yaml"
    path.write_text(HARBOR)
    cfg = {"envs": [str(path)], "tasks": ["ego"], "n": 2, "size": 64, "seed": 1, "clutter": False}
    summary = run_job("sparrta", cfg, tmp_path / "out", workers=2, progress=False)
    assert summary["finalized"] and not summary["failed"]
    job = json.loads((tmp_path / "out" / "job.json").read_text())
    assert job["config"]["env_files"]["harbor"]["yaml"] == HARBOR
    assert sorted(p.parent.parent.parent.name for p in (tmp_path / "out").rglob("img_*.jpg")) == ["harbor"] * 2


def test_vqa_records_environment_content_and_uses_names_for_directories(tmp_path):
    from sceneforge.scenarios.vqa.scenario import locate, parse_config as vqa_config, plan

    path = tmp_path / "harbor.yaml"
    path.write_text(HARBOR)
    cfg = vqa_config({"envs": [str(path)], "n": 2})
    assert cfg.env_names == ("harbor",) and locate(cfg, 1) == ("harbor", 1)
    path.unlink()  # workers rebuild it from the record
    again = vqa_config(json.loads(json.dumps(cfg.to_dict())))
    assert again.env("harbor").spec.ground.color == (40, 90, 160)
    assert plan(cfg.to_dict()).fingerprint == cfg.fingerprint()


def test_a_shipped_environment_record_does_not_depend_on_the_install_location():
    frozen = freeze_envs(["desert"])
    assert frozen["desert"]["dir"] is None  # same bytes from any checkout / site-packages
    assert load_frozen_env(frozen, "desert").path == env_path("desert")
