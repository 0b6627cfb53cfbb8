"""A SpaRRTa config resolved against its environments: the units of work (``units_of``), each
unit's sampling parameters (``setting_for``: the environment's defaults overridden by the config)
and how many placements one sample may try (``scene_budget``). Pure functions of the config;
``scenario.py`` (the render loop) and the benchmarks use them.
"""

from __future__ import annotations

from dataclasses import replace

from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.sparrta.camera_policy import (
    ALLO_MIN_BOX_PX,
    ANCHORS,
    BALANCE_STREAM,
    RELAX_AFTER,
    anchor_screen,
    effective_jitter,
    source_screen,
)
from sceneforge.scenarios.sparrta.config import SparrtaConfig, Unit, resolve_units
from sceneforge.scenarios.sparrta.scene import Setting
from sceneforge.scenarios.world.environments import list_envs

HARD_SAMPLE_FACTOR = 4  # see scene_budget


def scene_budget(cfg: SparrtaConfig) -> int:
    """Placements one sample may try before it fails: ``HARD_SAMPLE_FACTOR × max_scenes``.

    Most samples succeed in the first placement; a hard one (an allo "front" whose scenes leave
    no room for the figure) used to abort a whole job after ``max_scenes`` (6). The extra
    placements come from the sample's own seed stream (``sample_rng(..., i, stream=1+attempt)``),
    so the result is still a pure function of (config, index) and samples that succeeded before
    are unchanged.
    """
    return cfg.max_scenes * HARD_SAMPLE_FACTOR


def units_of(cfg: SparrtaConfig) -> list[Unit]:
    return resolve_units(cfg, lambda name: load_env_cached(cfg, name), list_envs)


def load_env_cached(cfg: SparrtaConfig, name: str):
    """The environment ``name`` (or the reference it was given as), rebuilt from the content the
    config recorded, with its asset library filtered by the config's licences."""
    return cfg.env(name)


def setting_for(cfg: SparrtaConfig, env, task: str) -> Setting:
    """Environment sampling defaults overridden by the config; min bbox scales with the size."""
    s = env.sampling
    env_size = getattr(s, "image_size", 224) or 224
    min_bbox = cfg.min_bbox_px if cfg.min_bbox_px is not None else s.min_bbox_px * cfg.size / env_size
    if cfg.min_bbox_px is None and cfg.camera_policy == "decorrelated" and task == "allo":
        # readable allo: every labelled object (the figure too) spans one ViT patch at 224²
        min_bbox = max(min_bbox, ALLO_MIN_BOX_PX * cfg.size / 224.0)
    margin = cfg.margin_ego_deg if task == "ego" else cfg.margin_allo_deg
    if margin is None:
        margin = s.margin_ego_deg if task == "ego" else s.margin_allo_deg
    ratio = cfg.min_visible_ratio if cfg.min_visible_ratio is not None else s.min_visible_ratio
    st = Setting(
        float(s.sigma_cm),
        float(s.max_pair_dist_cm),
        float(s.cam_xy_range_cm),
        tuple(float(v) for v in s.cam_height_range_cm),
        float(s.fov_deg),
        cfg.size,
        float(margin),
        float(ratio),
        float(min_bbox),
        cfg.max_tries,
        tuple(getattr(s, "centre_cm", (0.0, 0.0))),
        cfg.figure_yaw,
        effective_jitter(cfg.camera_policy, cfg.aim_jitter_deg),
    )
    if cfg.camera_policy == "decorrelated":
        st = replace(st, anchor=ANCHORS[task], heading_margin=task == "ego")
    return st


def sample_setting(cfg: SparrtaConfig, st: Setting, unit: Unit, i: int) -> Setting:
    """Sample ``i``'s own part of its unit's setting: with ``camera_policy: balanced`` where its
    source must appear (its quota cell along the label rotation, a uniform point in it from its
    own seed stream); with ``decorrelated`` where its anchor must appear (uniform in the window,
    from the same stream: never a function of the label); otherwise ``st`` unchanged."""
    if cfg.camera_policy not in ("balanced", "decorrelated"):
        return st
    rng = sample_rng(cfg.seed, unit.env, unit.task, unit.triple_id, i, stream=BALANCE_STREAM)
    if cfg.camera_policy == "decorrelated":
        return replace(st, anchor_screen=anchor_screen(rng), quota=quota_of(cfg, unit))
    return replace(st, source_screen=source_screen(unit.label_offset + i, rng))


def quota_of(cfg: SparrtaConfig, unit: Unit):
    """The layout quota (quotas.py) of a unit under ``decorrelated``: the table the config
    records for its (env, task, triple) (``SparrtaConfig.quota_tables``), else None."""
    if cfg.camera_policy != "decorrelated":
        return None
    return cfg.quota(unit.env, unit.task, unit.triple_id)


def attempt_setting(st: Setting, attempt: int) -> Setting:
    """The setting of a sample's placement ``attempt``: with ``camera_policy: balanced``, from
    attempt ``RELAX_AFTER`` on the source goes to the image centre (its quota point could not be
    framed in that many scenes); otherwise ``st`` unchanged."""
    if attempt < RELAX_AFTER:
        return st
    if st.anchor_screen is not None:
        return replace(st, anchor_screen=(0.5, 0.5))
    if st.source_screen is None:
        return st
    return replace(st, source_screen=(0.5, 0.5))
