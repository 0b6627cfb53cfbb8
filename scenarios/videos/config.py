"""The ``videos`` job config: validation, defaults from the environment, the recorded environment.

Plain dict in (YAML + flags via :mod:`scenarios.config_loader`), a frozen :class:`VideoConfig`
out; every error names the source and the field. ``env_file`` records the environment's content
(:func:`scenarios.world.environments.freeze_envs`), so workers rebuild it from the text.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from sceneforge.core.config_names import check_image_size
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.config import ScenarioConfig, option
from sceneforge.scenarios.videos import dsi
from sceneforge.scenarios.videos import motion as mo
from sceneforge.engine.server.renderers import parse_spec


CHARACTER_PROPS = ("auto", "on", "off")  # characters' optional props (scenarios/videos/characters.py)


@dataclass(frozen=True)
class VideoConfig(ScenarioConfig):
    """A validated ``videos`` job config (plain dict in, errors name the field)."""

    SCENARIO = "videos"

    env: str = option(help="environment name (sceneforge envs list) or YAML path")
    n: int = option(help="number of clips")
    seed: int = option(0, help="job seed")
    image_size: int | None = option(None, flag="--size", help="square frame size in pixels (default: the env's, 224)")
    fov_deg: float | None = None  # default: the environment's
    motion: mo.MotionConfig = option(default_factory=mo.MotionConfig, help="motion ranges (motion.FIELD)")
    subjects: tuple[str, ...] | None = None  # classes; default: the env triples' movable targets
    clutter: bool = option(True, flag="--no-clutter", help="no background objects")
    questions: tuple[str, ...] = ("obj", "cam", "dist", "dir")  # kinds asked per clip (see scenarios.videos.dsi)
    min_visible_ratio: float | None = None  # default: the environment's (0.8)
    min_bbox_px: float | None = None  # default: the environment's
    edge_margin_px: float = 2.0
    min_clearance_cm: float = 150.0
    max_tries: int = 400  # geometric candidates per render attempt
    max_render_tries: int = 6  # rendered attempts per clip (visibility failures)
    renderer: str | None = option(
        None,
        help="renderer of the servers: gl (default) or cycles[:samples=N] "
        "(path-traced frames; `sceneforge renderers install cycles`)",
    )
    # opt-in (issue 38); left out of the job's identity while at these defaults:
    ground_truth: tuple[str, ...] = option(
        (), metavar="KIND", help="dense per-frame ground truth besides poses and boxes: masks, depth, flow (gt/NNNNNN/*.npz)"
    )
    distractors: int = option(0, help="other movers per clip, 0..6 (scenarios/videos/movers.py)")
    distractor_motions: tuple[str, ...] = option(
        ("straight",), metavar="KIND", help="how distractors move, drawn per mover: straight (default), curve, stop_and_go, turn"
    )
    articulation: bool = option(
        False,
        flag="--articulated",
        help="subjects (and distractors) as rigs that walk, "
        "trot, run, roll and steer (config articulation: true; docs/videos.md)",
    )
    characters: bool = option(
        False,
        flag="--characters",
        help="draw the subject and distractors as skinned 0 A.D. people and animals where the "
        "character pack has their class (sceneforge assets install characters; CC-BY-SA; docs/videos.md)",
    )
    character_props: str = option(
        "auto",
        choices=CHARACTER_PROPS,
        help="characters' helmets, shields and weapons: auto (only where the environment allows them, "
        "character_props: true in its YAML; none of the shipped, modern ones), on, off",
    )
    # the environment's content (scenarios.world.environments.freeze_envs), filled in by from_dict:
    # the job's identity and what workers rebuild the environment from
    env_file: dict | None = field(default=None, hash=False, compare=False)

    @classmethod
    def coerce(cls, d: dict, source: str) -> dict:
        d = super().coerce(d, source)
        if isinstance(d.get("character_props"), bool):  # YAML 1.1 reads on/off as booleans
            d["character_props"] = "on" if d["character_props"] else "off"
        d["motion"] = mo.MotionConfig.from_dict(d.get("motion"))
        return d

    def check(self, source: str) -> None:
        self.validate(source)

    def complete(self, source: str) -> "VideoConfig":
        """The environment's content, read once (never looked up by name again)."""
        if self.env_file is None:
            # pydantic+shapely, ~90 ms: kept off `sceneforge --help` (the CLI parser imports this module)
            from sceneforge.scenarios.world.environments import freeze_envs

            ((name, entry),) = freeze_envs([self.env], f"{source}: env").items()
            return replace(self, env_file={name: entry})
        if not (isinstance(self.env_file, dict) and len(self.env_file) == 1):
            raise ConfigError(f"{source}: env_file is damaged (it records the environment's YAML)")
        return self

    def load_env(self):
        """The environment rebuilt from the recorded content (never looked up by name)."""
        # pydantic+shapely, ~90 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.world.environments import load_frozen_env

        return self.memo("env", lambda: load_frozen_env(self.env_file, next(iter(self.env_file))))

    def validate(self, source: str = "videos config") -> None:
        if not isinstance(self.env, str) or not self.env:
            raise ConfigError(f"{source}: env must be a name or path, got {self.env!r}")
        if not (isinstance(self.n, int) and self.n >= 1):
            raise ConfigError(f"{source}: n must be an integer >= 1, got {self.n!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ConfigError(f"{source}: seed must be an integer >= 0, got {self.seed!r}")
        if self.image_size is not None:  # the one range, even and <= 2048 for H.264 (core/config_names.py)
            check_image_size(self.image_size, source, video=True)
        if self.max_tries < 1 or self.max_render_tries < 1:
            raise ConfigError(f"{source}: max_tries and max_render_tries must be >= 1")
        bad = [q for q in self.questions if q not in dsi.SPACES]
        if bad or not self.questions:
            raise ConfigError(
                f"{source}: questions must be a non-empty subset of {', '.join(dsi.SPACES)}, got {list(self.questions)}"
            )
        if self.fov_deg is not None and not 0 < self.fov_deg < 180:
            raise ConfigError(f"{source}: fov_deg must be in (0, 180), got {self.fov_deg}")
        if self.renderer is not None:
            try:
                parse_spec(self.renderer)
            except ConfigError as e:
                raise ConfigError(f"{source}: renderer: {e}") from None
        self._validate_extras(source)
        if self.min_visible_ratio is not None and not 0 <= self.min_visible_ratio <= 1:
            raise ConfigError(f"{source}: min_visible_ratio must be in [0, 1], got {self.min_visible_ratio}")
        bbox = self.min_bbox_px  # a 400-digit int reached float() in load_context (issue 48)
        if bbox is not None and (isinstance(bbox, bool) or not isinstance(bbox, (int, float)) or not 0 <= bbox <= 1.0e6):
            raise ConfigError(f"{source}: min_bbox_px must be a number in [0, 1e6], got {str(bbox)[:40]}")

    def _validate_extras(self, source: str) -> None:
        # ~3 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.videos.ground_truth import GT_KINDS

        # ~2 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.videos.movers import MAX_DISTRACTORS, MOVER_MOTIONS

        bad = [g for g in self.ground_truth if g not in GT_KINDS]
        if bad or len(set(self.ground_truth)) != len(self.ground_truth):
            raise ConfigError(
                f"{source}: ground_truth must be distinct items of {', '.join(GT_KINDS)} "
                f"(poses and boxes are always written), got {list(self.ground_truth)}"
            )
        if (
            isinstance(self.distractors, bool)
            or not isinstance(self.distractors, int)
            or not 0 <= self.distractors <= MAX_DISTRACTORS
        ):
            raise ConfigError(f"{source}: distractors must be an integer in 0..{MAX_DISTRACTORS}, got {self.distractors!r}")
        if not isinstance(self.articulation, bool):
            raise ConfigError(f"{source}: articulation must be true or false, got {self.articulation!r}")
        if not isinstance(self.characters, bool):
            raise ConfigError(f"{source}: characters must be true or false, got {self.characters!r}")
        if self.characters and self.articulation:
            raise ConfigError(f"{source}: characters and articulation cannot be combined yet (pick one)")
        if self.character_props != "auto" and not self.characters:
            raise ConfigError(f"{source}: character_props {self.character_props} needs characters: true (--characters)")
        if self.characters and "flow" in self.ground_truth:
            raise ConfigError(
                f"{source}: ground_truth flow is not available with characters yet (the written flow moves actors "
                "rigidly; a character's limbs move by their skinning): leave out flow"
            )
        motions = self.distractor_motions
        if (
            isinstance(motions, str)
            or not motions
            or len(set(motions)) != len(motions)
            or any(m not in MOVER_MOTIONS for m in motions)
        ):
            raise ConfigError(
                f"{source}: distractor_motions must be distinct items of {', '.join(MOVER_MOTIONS)}, got {motions!r}"
            )

    def to_dict(self) -> dict:
        """The normalised plain form (job.json's ``config``; its hash is the fingerprint)."""
        d = asdict(self)
        d["motion"] = self.motion.identity()  # opt-in motion fields at their defaults left out
        if d["renderer"] is None:  # jobs made before the field existed keep their identity
            del d["renderer"]
        for key, default in (
            ("ground_truth", ()),
            ("distractors", 0),
            ("distractor_motions", ("straight",)),
            ("articulation", False),
            ("characters", False),
            ("character_props", "auto"),
        ):
            if getattr(self, key) == default:
                del d[key]
        return json.loads(json.dumps(d, sort_keys=True, default=list))

    normalised = to_dict  # its older name
