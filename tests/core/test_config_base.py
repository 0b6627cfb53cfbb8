"""core/config_base.py: the one config base (issue 35 item 3) that scenario configs
(scenarios.config.ScenarioConfig) and probing's ProbeConfig are both built on, knowing neither."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from sceneforge.core.config_base import ConfigBase, cli_fields, comma_list, option
from sceneforge.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Job(ConfigBase):
    LABEL = "job config"
    ALIASES = {"size": "image_size"}
    OMIT_AT_DEFAULT = {"note": ""}

    out: str = option(help="output directory")
    n: int = option(4, integer=True, bounds=(1, 100), help="items")
    ratio: float = option(0.5, bounds=(0.0, 1.0), help="a fraction")
    image_size: int = option(64, flag="--size", help="pixels")
    kinds: tuple[str, ...] = option(("a",), choices=("a", "b"), help="kinds")
    threads: int | None = option(None, integer=True, bounds=(1, 64), help="threads (None: all)")
    note: str = option("", cli=False)
    tags: tuple[str, ...] | None = option(None, parse=comma_list, help="tags")

    def check(self, source):
        self.need(self.n <= self.image_size, "n", f"must be <= image_size ({self.image_size})", self.n, source)


def test_parses_coerces_and_renames():
    j = Job.from_dict({"out": "o", "size": 32, "kinds": "b", "tags": ["x", "y"]}, "j.yaml")
    assert (j.out, j.image_size, j.kinds, j.tags, j.threads) == ("o", 32, ("b",), ("x", "y"), None)
    assert j.replace(n=8).n == 8 and j.n == 4


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"out": "o", "nn": 1}, "j.yaml: unknown field(s) nn; known: out, n, ratio, "),
        ({"n": 2}, "j.yaml: missing field 'out' (--out is required, or set 'out' in --config)"),
        ({"out": "o", "n": 0}, "j.yaml: n must be an integer in [1, 100], got 0"),
        ({"out": "o", "n": 2.0}, "j.yaml: n must be an integer in [1, 100], got 2.0"),
        ({"out": "o", "n": True}, "j.yaml: n must be an integer in [1, 100], got True"),
        ({"out": "o", "ratio": float("nan")}, "j.yaml: ratio must be a number in [0, 1], got nan"),
        ({"out": "o", "ratio": "x"}, "j.yaml: ratio must be a number in [0, 1], got 'x'"),
        ({"out": "o", "threads": 0}, "j.yaml: threads must be an integer in [1, 64], got 0"),
        ({"out": "o", "kinds": ["a", "c"]}, "j.yaml: kinds must be one of ('a', 'b'), got ('a', 'c')"),
        ({"out": "o", "n": 50, "image_size": 32}, "j.yaml: n must be <= image_size (32), got 50"),
        ({"out": "o", "size": 8, "image_size": 8}, "j.yaml: give image_size only (size is its old name)"),
        ("out: o", "j.yaml: expected a mapping of config fields, got str"),
    ],
)
def test_every_error_is_one_line_naming_source_field_and_value(raw, message):
    with pytest.raises(ConfigError) as e:
        Job.from_dict(raw, "j.yaml")
    assert str(e.value).startswith(message) and "\n" not in str(e.value), str(e.value)


def test_default_source_is_the_label():
    with pytest.raises(ConfigError, match=r"^job config: n must be"):
        Job.from_dict({"out": "o", "n": 0})


def test_to_dict_and_fingerprint():
    a = Job.from_dict({"out": "o"})
    assert "note" not in a.to_dict() and a.to_dict()["kinds"] == ["a"]  # omitted at its default; lists
    assert Job.from_dict(a.to_dict()).fingerprint() == a.fingerprint()  # a recorded config reads back
    assert Job.from_dict({"out": "o", "note": "x"}).fingerprint() != a.fingerprint()
    assert len(a.fingerprint()) == 16


def test_cli_fields_leave_out_cli_false():
    assert [f.name for f in cli_fields(Job)] == ["out", "n", "ratio", "image_size", "kinds", "threads", "tags"]


def test_both_config_families_are_built_on_it():
    from sceneforge.probing.config import ProbeConfig
    from sceneforge.scenarios.config import ScenarioConfig
    from sceneforge.scenarios.contract import config_class

    assert issubclass(ScenarioConfig, ConfigBase) and issubclass(ProbeConfig, ConfigBase)
    for name in ("sparrta", "vqa", "videos", "distance"):
        assert issubclass(config_class(name), ScenarioConfig), name


def test_it_imports_nothing_of_ours_but_core():
    tree = ast.parse((ROOT / "core" / "config_base.py").read_text())
    ours = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("sceneforge")]
    assert ours and all(m.startswith("sceneforge.core.") for m in ours), ours
