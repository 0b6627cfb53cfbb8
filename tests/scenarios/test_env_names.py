"""Issue 39 item 9: a shipped environment's name means the shipped environment, whatever lies in
the working directory; a file is used when the reference is explicitly a path."""

from __future__ import annotations

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.world.environments import ENVS_DIR, load_env


def _local_desert(path):
    path.write_text((ENVS_DIR / "desert.yaml").read_text().replace("description:", "description: LOCAL FILE.", 1))


def test_a_file_named_like_a_shipped_env_does_not_replace_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _local_desert(tmp_path / "desert")
    assert "LOCAL FILE" not in load_env("desert").spec.description  # was the local file, silently
    assert "LOCAL FILE" in load_env("./desert").spec.description  # explicit path: the file


def test_a_dataset_directory_named_like_a_shipped_env_is_not_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "desert").mkdir()  # every dataset root has one: was "Is a directory"
    assert load_env("desert").name == "desert"
    (tmp_path / "mine").mkdir()
    with pytest.raises(ConfigError, match="'mine': ./mine is a directory, not an environment file"):
        load_env("mine")


def test_a_bare_name_that_is_not_shipped_still_names_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").write_text((ENVS_DIR / "desert.yaml").read_text().replace("name: desert", "name: mine"))
    assert load_env("mine").name == "mine"
