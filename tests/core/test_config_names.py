"""Issue 35 item 5: one name per thing. Old key names and flags keep working with one deprecation
line naming the file and key (core/config_names.py); both names at once is an error; one
image-size range."""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from sceneforge.cli import build_parser
from sceneforge.core.config_names import IMAGE_SIZE, RENAMED, RENAMED_FLAGS, VIDEO_MAX_IMAGE_SIZE, check_image_size, rename_keys
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.config_loader import load_config


def deprecations(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]


def test_old_keys_are_renamed_with_one_line_naming_the_file_and_key(caplog):
    with caplog.at_level(logging.WARNING):
        out = rename_keys({"n": 2, "size": 448, "min-box-px": 16}, "vqa", "--config q.yaml")
    assert out == {"n": 2, "image_size": 448, "min_bbox_px": 16} and list(out) == ["n", "image_size", "min_bbox_px"]
    assert deprecations(caplog) == [
        "--config q.yaml: 'size' is deprecated, write 'image_size' (the old name still works for now)",
        "--config q.yaml: 'min-box-px' is deprecated, write 'min_bbox_px' (the old name still works for now)",
    ]


def test_new_names_pass_silently_and_both_names_are_an_error(caplog):
    with caplog.at_level(logging.WARNING):
        assert rename_keys({"image_size": 96}, "sparrta", "s.yaml") == {"image_size": 96}
        assert rename_keys({"size": 96}, "no-such-scope", "s.yaml") == {"size": 96}
    assert deprecations(caplog) == []
    with pytest.raises(ConfigError, match=r"^s.yaml: give image_size only \(size is its old name\)$"):
        rename_keys({"size": 96, "image_size": 96}, "sparrta", "s.yaml")


def test_every_old_name_maps_to_a_different_new_name():
    for scope, table in RENAMED.items():
        assert all(old != new for old, new in table.items()), scope
        assert not set(table) & set(table.values()), scope
    assert all(old.startswith("--") and new.startswith("--") and old != new for old, new in RENAMED_FLAGS.items())


@dataclass(frozen=True)
class _Videos:
    SCENARIO = "videos"
    image_size: int = 224
    n: int = 1

    @classmethod
    def from_dict(cls, raw: dict, source: str) -> "_Videos":
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(**raw)


def test_a_config_file_with_an_old_key_loads_with_one_line(tmp_path, caplog):
    """load_config renames the file's keys (the config's SCENARIO scope) before the flags apply, so
    an old key in the file and its new flag on the command line do not collide."""
    path = tmp_path / "v.yaml"
    path.write_text("size: 96\nn: 3\n")
    with caplog.at_level(logging.WARNING):
        cfg, merged = load_config(_Videos.from_dict, command="sceneforge videos", config_file=path)
    assert cfg == _Videos(image_size=96, n=3) and merged == {"image_size": 96, "n": 3}
    assert deprecations(caplog) == [
        f"--config {path}: 'size' is deprecated, write 'image_size' (the old name still works for now)"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        cfg, _ = load_config(_Videos.from_dict, command="sceneforge videos", config_file=path, overrides={"image_size": 64})
    assert cfg.image_size == 64 and len(deprecations(caplog)) == 1  # the flag wins, as for any key


def _commands_with(flag: str) -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return [name for name, p in sub.choices.items() if flag in p._option_string_actions]


@pytest.mark.parametrize("old, new", sorted(RENAMED_FLAGS.items()))
def test_every_renamed_flag_keeps_its_old_spelling_on_every_command_that_has_the_new_one(old, new, caplog):
    commands = _commands_with(new)
    assert commands, f"no command has {new}"
    for command in commands:
        parser = build_parser()
        sub = next(a for a in parser._actions if a.dest == "command").choices[command]
        action = sub._option_string_actions[new]
        value = [] if action.nargs == 0 else ["16"]
        required = [a for a in sub._actions if a.required and a.option_strings]
        base = [command] + [x for a in required for x in (a.option_strings[0], "16" if a.type in (int, float) else "x")]
        base += ["x" for a in sub._actions if a.required and not a.option_strings]  # positionals (study's CONFIG)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            with_new = build_parser().parse_args([*base, new, *value])
            assert deprecations(caplog) == []
            with_old = build_parser().parse_args([*base, old, *value])
        assert vars(with_old) == vars(with_new), command
        lines = deprecations(caplog)
        assert len(lines) == 1 and f"'{old}' is deprecated, write '{new}'" in lines[0] and command in lines[0]
        assert old not in sub.format_help()  # hidden from --help


@pytest.mark.parametrize("value", [IMAGE_SIZE[0], 224, IMAGE_SIZE[1]])
def test_one_image_size_range(value):
    assert check_image_size(value, "c.yaml") == value


@pytest.mark.parametrize("value", [IMAGE_SIZE[0] - 1, IMAGE_SIZE[1] + 1, 224.0, True, "224", None])
def test_image_size_out_of_range_is_one_line_naming_file_and_value(value):
    with pytest.raises(ConfigError) as e:
        check_image_size(value, "c.yaml")
    assert str(e.value) == f"c.yaml: image_size must be an integer in 16..4096 pixels, got {value!r}"


def test_video_frames_are_even_and_at_most_2048():
    assert check_image_size(VIDEO_MAX_IMAGE_SIZE, "v", video=True) == 2048
    for bad in (2050, 225):
        with pytest.raises(ConfigError, match="image_size must be an even integer in 16..2048"):
            check_image_size(bad, "v", video=True)


def test_a_recorded_config_keeps_the_names_its_datasets_were_made_with(caplog):
    """VQA's fields are image_size / min_bbox_px; its job.json (and fingerprint) still say size /
    min_box_px, so existing datasets stay byte-identical and resume; reading one back is silent."""
    from sceneforge.core.config_names import as_recorded, from_recorded

    d = {"envs": ["desert"], "image_size": 448, "min_bbox_px": 40.0, "n": 8}
    recorded = as_recorded(d, "vqa")
    assert recorded == {"envs": ["desert"], "size": 448, "min_box_px": 40.0, "n": 8}
    assert list(recorded) == ["envs", "size", "min_box_px", "n"]
    assert {from_recorded("vqa").get(k, k): v for k, v in recorded.items()} == d
    assert as_recorded(d, "sparrta") == d and from_recorded("sparrta") == {}


def test_vqa_old_keys_and_flag_keep_working_with_one_line_each(tmp_path, caplog):
    """VQA said ``size`` / ``min_box_px`` / ``--min-box-px`` where every other config says
    ``image_size`` / ``min_bbox_px``: the old spellings give the same config, one line each."""
    from sceneforge.commands.config_flags import config_from_args
    from sceneforge.scenarios.vqa.scenario import VqaConfig

    old_file, new_file = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old_file.write_text("envs: [desert]\nn: 1\nsize: 192\nmin_box_px: 16\n")
    new_file.write_text("envs: [desert]\nn: 1\nimage_size: 192\nmin_bbox_px: 16\n")
    with caplog.at_level(logging.WARNING):
        new, new_plain = load_config(VqaConfig.from_dict, command="sceneforge vqa", config_file=new_file)
        assert deprecations(caplog) == []
        old, old_plain = load_config(VqaConfig.from_dict, command="sceneforge vqa", config_file=old_file)
    assert old == new and old_plain == new_plain and (new.image_size, new.min_bbox_px) == (192, 16)
    assert len(deprecations(caplog)) == 2
    assert all(line.startswith(f"--config {old_file}: ") for line in deprecations(caplog))
    assert "'size'" in deprecations(caplog)[0] and "'min_box_px'" in deprecations(caplog)[1]
    caplog.clear()
    argv = ["vqa", "--n", "1", "--out", "x", "--size", "192"]
    with caplog.at_level(logging.WARNING):
        by_old, _ = config_from_args(
            build_parser().parse_args([*argv, "--min-box-px", "16"]), VqaConfig, command="sceneforge vqa"
        )
    by_new, _ = config_from_args(build_parser().parse_args([*argv, "--min-bbox-px", "16"]), VqaConfig, command="sceneforge vqa")
    assert by_old == by_new and by_new.min_bbox_px == 16 and len(deprecations(caplog)) == 1
    # the recorded form (job.json, the fingerprint) keeps VQA's first names and reads back silently
    assert {"size", "min_box_px"} <= set(new.to_dict()) and not {"image_size", "min_bbox_px"} & set(new.to_dict())
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert VqaConfig.from_dict(new.to_dict(), "job.json") == new
    assert deprecations(caplog) == []


@pytest.mark.parametrize(
    "scenario, bad",
    [("sparrta", 4097), ("sparrta", 15), ("vqa", 4097), ("vqa", 15), ("videos", 2050), ("videos", 225), ("videos", 15)],
)
def test_every_config_checks_image_size_with_the_one_rule(scenario, bad):
    """sparrta 16..4096, vqa 16..4096 (was 32..4096), videos even 16..2048 (was 32..2048): one
    function, one wording naming the source and the value."""
    from sceneforge.scenarios.contract import config_class

    cls = config_class(scenario)
    env = {"videos": {"env": "desert"}}.get(scenario, {"envs": ["desert"]})
    with pytest.raises(
        ConfigError,
        match=rf"image_size must be an (even )?integer in 16\.\.(4096|2048) "
        rf"(\(H\.264 yuv420p\) )?pixels, got {bad}$",
    ):
        cls.from_dict({**env, "n": 1, "image_size": bad}, "c.yaml")
    smallest = {"videos": {"image_size": 16}, "vqa": {"image_size": 16, "min_bbox_px": 8}}
    assert cls.from_dict({**env, "n": 1, **smallest.get(scenario, {"image_size": 16})}, "c.yaml")


def test_an_environment_file_s_image_size_has_the_same_range(tmp_path):
    import yaml

    from sceneforge.scenarios.world.environments import load_env

    env = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / "envs" / "desert.yaml").read_text())
    for value, ok in ((IMAGE_SIZE[1], True), (IMAGE_SIZE[1] + 1, False), (IMAGE_SIZE[0] - 1, False)):
        env["sampling"]["image_size"] = value
        path = tmp_path / f"desert_{value}.yaml"
        path.write_text(yaml.safe_dump(env))
        if ok:
            assert load_env(str(path)).sampling.image_size == value
        else:
            with pytest.raises(ConfigError, match="image_size"):
                load_env(str(path))
