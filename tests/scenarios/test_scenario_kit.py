"""The scenario kit (issue 35 item 3): one ScenarioConfig base, flags generated from its fields,
the registry reading NAME/Config, and a fourth scenario (``distance``) that costs one module and
one registry line, run end to end through ``sceneforge run`` and checked against geometry."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.config import ScenarioConfig, comma_list, option


@dataclass(frozen=True)
class Toy(ScenarioConfig):
    SCENARIO = "toy"
    ALIASES = {"size": "image_size"}
    OMIT_AT_DEFAULT = {"renderer": None}

    env: str = option(help="environment")
    n: int = option(4, integer=True, bounds=(1, 100), help="samples")
    image_size: int = option(64, flag="--size", help="pixels")
    tasks: tuple[str, ...] = option(("ego",), choices=("ego", "allo"), help="tasks")
    clutter: bool = option(True, flag="--no-clutter", help="no clutter")
    masks: bool = option(False, help="masks")
    licenses: tuple[str, ...] | None = option(None, parse=comma_list, help="licences")
    renderer: str | None = option(None, help="renderer")
    hidden: int = 3  # no option(): not on the command line

    def check(self, source):
        self.need(self.n % 2 == 0, "n", "must be even", self.n, source)


def test_the_base_parses_validates_and_names_field_and_value():
    c = Toy.from_dict({"env": "desert", "size": 32, "tasks": "allo", "licenses": ["cc0"]}, "c.yaml")
    assert (c.image_size, c.tasks, c.licenses) == (32, ("allo",), ("cc0",))
    bad = [
        ({"env": "d", "nn": 1}, "c.yaml: unknown field(s) nn; known: env, n, "),
        ({"n": 2}, "c.yaml: missing field 'env' (--env is required"),
        ({"env": "d", "n": 0}, "c.yaml: n must be an integer in [1, 100], got 0"),
        ({"env": "d", "n": 2.0}, "c.yaml: n must be an integer in [1, 100], got 2.0"),
        ({"env": "d", "n": 3}, "c.yaml: n must be even, got 3"),
        ({"env": "d", "tasks": ["ego", "up"]}, "c.yaml: tasks must be one of ('ego', 'allo'), got ('ego', 'up')"),
        ({"env": "d", "size": 8, "image_size": 8}, "c.yaml: give image_size only (size is its old name)"),
        ([1, 2], "c.yaml: expected a mapping of config fields, got list"),
    ]
    for raw, message in bad:
        with pytest.raises(ConfigError) as e:
            Toy.from_dict(raw, "c.yaml")
        assert str(e.value).startswith(message) and "\n" not in str(e.value), (raw, str(e.value))


def test_to_dict_and_fingerprint_are_the_identity():
    a = Toy.from_dict({"env": "d"})
    assert "renderer" not in a.to_dict() and a.to_dict()["tasks"] == ["ego"]  # omitted at its default
    assert Toy.from_dict(a.to_dict()).fingerprint() == a.fingerprint()  # a recorded config resumes
    assert Toy.from_dict({"env": "d", "renderer": "gl"}).fingerprint() != a.fingerprint()
    assert len(a.fingerprint()) == 16


def test_flags_come_from_the_fields():
    from sceneforge.commands.config_flags import add_config_flags, overrides_from_args

    p = argparse.ArgumentParser()
    add_config_flags(p, Toy)
    flags = {s for a in p._actions for s in a.option_strings}
    assert {"--env", "--n", "--size", "--tasks", "--no-clutter", "--masks", "--licenses", "--renderer"} <= flags
    assert "--hidden" not in flags and "--clutter" not in flags
    args = p.parse_args(["--env", "city", "--size", "48", "--tasks", "ego", "allo", "--no-clutter", "--licenses", "cc0, cc-by"])
    assert overrides_from_args(args) == {
        "env": "city",
        "image_size": 48,
        "tasks": ["ego", "allo"],
        "clutter": False,
        "licenses": ["cc0", "cc-by"],
    }  # flags not given override nothing
    with pytest.raises(SystemExit):
        p.parse_args(["--tasks", "up"])


def test_nested_config_fields_are_flags_too():
    from sceneforge.commands.config_flags import add_config_flags, overrides_from_args
    from sceneforge.scenarios.videos.config import VideoConfig

    p = argparse.ArgumentParser()
    add_config_flags(p, VideoConfig)
    args = p.parse_args(["--env", "city", "--n", "2", "--frames", "8", "--fps", "4", "--no-clutter"])
    assert overrides_from_args(args) == {"env": "city", "n": 2, "motion.n_frames": 8, "motion.fps": 4.0, "clutter": False}


def test_the_registry_reads_name_and_config():
    from sceneforge.scenarios import contract, registry
    from sceneforge.scenarios.distance import DistanceConfig
    from sceneforge.scenarios.sparrta.config import SparrtaConfig
    from sceneforge.scenarios.videos.config import VideoConfig
    from sceneforge.scenarios.vqa.scenario import VqaConfig

    for name, cls in (("sparrta", SparrtaConfig), ("vqa", VqaConfig), ("videos", VideoConfig), ("distance", DistanceConfig)):
        assert contract.config_class(name) is cls and issubclass(cls, ScenarioConfig)
        assert contract.get_scenario(name).NAME == name
        assert contract.get_scenario(contract.get_scenario(name).path()) is contract.get_scenario(name)

    class Other(contract.Scenario):  # a second class cannot take a registered name
        NAME = "distance"

    with pytest.raises(ConfigError, match="'distance' is taken by sceneforge.scenarios.distance.Distance"):
        registry.register_scenario(Other)
    Other.NAME = "not an identifier"
    with pytest.raises(ConfigError, match="must be an identifier"):
        registry.register_scenario(Other)
    assert registry.lookup("distance") is contract.get_scenario("scenarios.distance")


def _rows(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "desert").glob("sample_*.json"))]


@pytest.fixture(scope="module")
def distance_set(tmp_path_factory):
    """``sceneforge run distance``: the generic CLI path, no command module of its own."""
    from sceneforge import cli

    out = tmp_path_factory.mktemp("distance") / "d"
    argv = [
        "run",
        "distance",
        "--env",
        "desert",
        "--n",
        "4",
        "--size",
        "96",
        "--depth",
        "--out",
        str(out),
        "--quiet",
        "--no-fetch",
    ]
    assert cli.main(argv) == 0
    return out, argv


def test_distance_labels_are_the_geometry(distance_set):
    from sceneforge.scenarios.world.environments import load_env

    out, _ = distance_set
    lib = load_env("desert").library
    recs = _rows(out)
    assert len(recs) == 4
    for rec in recs:
        cam = rec["camera"]["location"]
        eye = (cam["x"], cam["y"], cam["z"])
        dist = {}
        for k in ("a", "b"):  # by hand: the object's standing box centre = base + half its height
            o = rec["objects"][k]
            x, y, z = o["location"]
            dist[k] = math.dist(eye, (x, y, z + lib.size_cm(o["asset"])[2] / 2.0))
            assert dist[k] == pytest.approx(o["distance_cm"], abs=1e-6)
        assert rec["label"] == ("a" if dist["a"] < dist["b"] else "b")
        assert abs(dist["a"] - dist["b"]) >= 0.2 * max(dist.values())  # min_gap: no coin flips
        for kind in ("image", "mask", "depth"):
            assert (out / rec["files"][kind]).is_file()
        # and the pixels agree: the labelled object's own mask pixels are nearer in the depth image
        mask = np.asarray(Image.open(out / rec["files"]["mask"]).convert("RGB"))
        depth = np.load(out / rec["files"]["depth"])
        med = {k: float(np.median(depth[np.all(mask == rec["objects"][k]["color"], axis=-1)])) for k in ("a", "b")}
        assert min(med, key=med.get) == rec["label"], (med, rec["label"])


def test_distance_table_and_job_record(distance_set):
    out, _ = distance_set
    table = pd.read_parquet(out / "samples.parquet")
    assert list(table["label"]) == [r["label"] for r in _rows(out)]
    assert (out / "metadata.csv").is_file()
    job = json.loads((out / "job.json").read_text())
    assert job["scenario"] == "scenarios.distance" and job["config"]["n"] == 4 and job["config"]["image_size"] == 96


def test_distance_is_deterministic_at_two_workers(distance_set, tmp_path):
    from sceneforge import cli

    out, argv = distance_set
    other = tmp_path / "d2"
    assert cli.main([*argv[: argv.index("--out")], "--out", str(other), "--workers", "2", "--quiet", "--no-fetch"]) == 0
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and ".farm" not in p.parts)
    assert files and files == sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file() and ".farm" not in p.parts)
    assert all((out / f).read_bytes() == (other / f).read_bytes() for f in files)


def test_a_bad_flag_value_is_one_line(tmp_path, capsys):
    from sceneforge import cli

    assert cli.main(["run", "distance", "--n", "0", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "n must be an integer in [1, 1000000], got 0" in err[0]
    assert not (tmp_path / "x").exists()
