"""The SpaRRTa job config: validation, fingerprint, and the mapping index → (env, task, triple, i).

A job covers environments × tasks; ``n`` samples per (environment, task) are spread over that
environment's object triples (the first ``n % T`` triples get one more). Global sample indices
run env-major, then task, then triple, then the index within the (env, task, triple) *unit*.
Labels rotate through :data:`~scenarios.sampling.relations.LABELS` along each (env, task) group, so the
four labels are equally frequent (±1) in every group and in every unit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Callable

from sceneforge.core.config_names import check_image_size
from sceneforge.core.errors import ConfigError
from sceneforge.engine.server.renderers import parse_spec
from sceneforge.scenarios.config import ScenarioConfig, comma_list, option
from sceneforge.scenarios.sparrta.camera_policy import CAMERA_POLICIES, DEFAULT_POLICY
from sceneforge.scenarios.sparrta.quotas import QuotaTable, no_table_reason, read_document, shipped_document
from sceneforge.scenarios.sampling.relations import LABELS, check_margin

TASKS = ("ego", "allo")
FORMATS = ("jpg", "png")
FIGURE_YAWS = ("random", "face_source")  # allo viewpoint figure: SpaRRTa's random yaw, or looking at the source
SPLITS = ("train", "val", "test")
LAYOUTS = ("sceneforge", "sparrta")  # sparrta: also OUT/sparrta/<env>[_N]/mid-objects (scenarios/sparrta/layout.py)
_COUNT = (1, float("inf"))  # bounds of a count (n, samples_per_scene, max_tries, ...)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SparrtaConfig(ScenarioConfig):
    """Everything that determines the output bytes (so it all goes into the fingerprint)."""

    SCENARIO = "sparrta"
    ALIASES = {"size": "image_size"}  # the old name of image_size
    # left out of to_dict at these values: datasets made before the field existed keep their identity
    OMIT_AT_DEFAULT = {
        "renderer": None,
        "layout": "sceneforge",
        "split_pattern": None,
        "camera_policy": "jitter",
        "characters": False,
        "character_props": "auto",
        "quota_tables": None,
        "quota_table_files": None,
    }

    envs: tuple[str, ...] = option(("desert",), flag="--env", help="environment name(s), a YAML path, or 'all'")
    tasks: tuple[str, ...] = option(("ego",), choices=TASKS, help="ego (camera) and/or allo (human figure)")
    n: int = option(40, bounds=_COUNT, integer=True, help="samples per (environment, task), spread over the triples")
    seed: int = option(0, bounds=(0, 2**63 - 1), integer=True, help="random seed")
    image_size: int = option(224, flag="--size", help="square image size in pixels")  # "size" is accepted
    triples: tuple[str, ...] | None = option(None, help="only these triple ids, e.g. rock_truck")
    image_format: str = option("jpg", flag="--format", choices=FORMATS, help="image format (as SpaRRTa: jpg)")
    jpeg_quality: int = option(95, bounds=(1, 100), help="JPEG quality, 1..100")
    depth: bool = option(False, help="also write depth (depth_NNNN.npy, ray depth, cm, float32)")
    masks: bool = option(False, help="also write instance masks (mask_NNNN.png; colours in params mask_colors)")
    clutter: bool = option(True, flag="--no-clutter", help="leave out the environment's background objects")
    margin_ego_deg: float | None = option(
        None, flag="--margin-ego", help="ambiguity margin for the camera, degrees (default: the env's, 15)"
    )
    margin_allo_deg: float | None = option(
        None, flag="--margin-allo", help="ambiguity margin for the human, degrees (default: the env's, 10)"
    )
    min_visible_ratio: float | None = option(
        None, bounds=(0.0, 1.0), help="visible/unoccluded pixels per object (default: the env's, 0.8)"
    )
    min_bbox_px: float | None = option(None, help="min bbox longest edge at the output size, px (default: the env's)")
    samples_per_scene: int = option(4, bounds=_COUNT, integer=True, help="consecutive samples sharing one object placement")
    max_tries: int = option(4000, bounds=_COUNT, integer=True, help="geometric candidates per placement/camera search")
    max_render_tries: int = option(12, bounds=_COUNT, integer=True, help="visibility checks per scene before a fresh placement")
    max_scenes: int = option(6, bounds=_COUNT, integer=True, help="fresh placements per sample before giving up")
    licenses: tuple[str, ...] | None = option(
        None, parse=comma_list, help="only assets of these license families, e.g. cc0,cc-by"
    )
    renderer: str | None = option(
        None,
        help="renderer of the servers this job starts: gl (default) or cycles "
        "(path-traced lit; `sceneforge renderers install cycles`), e.g. cycles:samples=32",
    )
    layout: str = option(
        "sceneforge", choices=LAYOUTS, help="sparrta: also write OUT/sparrta/<env>[_N]/mid-objects for SpaRRTa's train.py"
    )
    # The allo figure's yaw. The label never depends on it (SpaRRTa's rule: the line of sight
    # from the figure's position through the source); "random" (uniform, as in SpaRRTa's own
    # scenes) keeps the figure's body from pointing at the source, which would hand a model
    # the label's frame without any perspective taking. "face_source" = sceneforge < 0.3.
    figure_yaw: str = option(
        "random",
        choices=FIGURE_YAWS,
        help="allo figure's yaw: random (as SpaRRTa's scenes) or facing the source; the label never depends on it",
    )
    # The camera aims at the labelled objects' centroid turned by a uniform yaw and pitch offset
    # in ±aim_jitter_deg. Aimed exactly at the centroid (0, sceneforge < 0.3), one object's
    # position in the image gives the label away (a 2-D box of the source alone predicted the
    # ego label at 0.95; docs/notes/validation-journal.md "Shortcuts"); 15° brings it to ~0.5 (chance 0.25).
    aim_jitter_deg: float = option(
        15.0,
        flag="--aim-jitter",
        bounds=(0.0, 45.0),
        help="camera aim: the objects' centroid turned by uniform ±DEG yaw and pitch "
        "(0 = exactly at the centroid, which lets one object's position give the label away)",
    )
    # Where the camera aims (scenarios/sparrta/camera_policy.py, docs/datasets.md "Camera policy"):
    # "decorrelated" (default since 0.6.0: no single box predicts the label), "jitter" (the
    # centroid ± aim_jitter_deg), "sparrta" (exactly at the centroid, as SpaRRTa describes) or
    # "balanced" (the source at a label-independent image position: no source-box shortcut).
    camera_policy: str = option(
        DEFAULT_POLICY,
        choices=CAMERA_POLICIES,
        help="where the camera aims: decorrelated (default: no single object's box "
        "predicts the label; ego margins around the camera's heading too; allo objects >= 16 px), "
        "jitter (the objects' centroid ± --aim-jitter; the default before 0.6.0), sparrta "
        "(exactly at the centroid, as SpaRRTa describes) or balanced (the source at an image "
        "position drawn independently of the label); docs/datasets.md",
    )
    # Splits of successive scenes, cycled (None = writers.SPLIT_PATTERN: 80/10/10). The demo's
    # 40/20/40 gives a small set a test split a probe report accepts (docs/datasets.md "Splits").
    split_pattern: tuple[str, ...] | None = option(
        None, choices=SPLITS, help="splits of successive scenes, cycled (default 80/10/10: 8 train, 1 val, 1 test)"
    )
    # Skinned 0 A.D. people and animals for the classes the character pack has (issue 49 item 4;
    # scenarios/sparrta/characters.py): opt-in, left out of the identity when off.
    characters: bool = option(
        False,
        flag="--characters",
        help="draw the human/animal objects and the allo figure as skinned 0 A.D. characters in sampled poses where "
        "the character pack has their class (sceneforge assets install characters; CC-BY-SA; docs/datasets.md)",
    )
    character_props: str = option(
        "auto",
        choices=("auto", "on", "off"),
        help="characters' helmets, shields and weapons: auto (only where the environment allows them, "
        "character_props: true in its YAML; none of the shipped, modern ones), on, off",
    )
    # Layout-quota tables a user calibrated for environments without a shipped one (a custom YAML, an
    # edited shipped one): `python -m sceneforge.scenarios.sparrta.quota_pilot ENV.yaml --out DIR`
    # writes DIR/<name>.json. Read once by parse_config into quota_tables (checked against the
    # environment's sha256) and then cleared: the identity is the tables' content, not where they lay.
    quota_table_files: tuple[str, ...] | None = option(
        None,
        flag="--quota-table",
        parse=comma_list,
        metavar="FILE[,FILE]",
        help="layout-quota table(s) for environments without a shipped one (decorrelated allo), made by "
        "`python -m sceneforge.scenarios.sparrta.quota_pilot ENV.yaml --out DIR` (docs/datasets.md 'Camera policy')",
    )
    # The environments' content, filled in by parse_config from ``envs`` (see
    # scenarios.world.environments.freeze_envs): the job's identity and what workers rebuild them from.
    env_files: dict | None = field(default=None, hash=False, compare=False)
    # camera_policy decorrelated, allo (since 0.7.0): the layout-quota tables of the environments
    # (scenarios/sparrta/quotas.py), filled in by parse_config from the shipped ones
    # (``{env: the shipped document}``, only environments whose content has one): part of the job's
    # identity, and what workers read. A recorded config without it (0.6.x) runs without quotas.
    quota_tables: dict | None = field(default=None, hash=False, compare=False)

    @classmethod
    def coerce(cls, values: dict, source: str) -> dict:
        """A *recorded* config (``job.json``, a worker's: it carries ``env_files``) without
        ``camera_policy`` was made before 0.6.0, when the default was ``jitter`` and ``to_dict``
        left it out there (it still does, so jitter jobs keep their fingerprint): read it as
        ``jitter``. A user's config (flags, YAML) without it gets today's default."""
        if "env_files" in values and "camera_policy" not in values:
            values = {**values, "camera_policy": "jitter"}
        if isinstance(values.get("character_props"), bool):  # YAML 1.1 reads on/off as booleans
            values = {**values, "character_props": "on" if values["character_props"] else "off"}
        return super().coerce(values, source)

    @property
    def size(self) -> int:
        """Alias of :attr:`image_size` (older configs and code say ``size``)."""
        return self.image_size

    def env(self, name: str):
        """The environment ``name`` (or the reference it was given as), rebuilt from the recorded
        content, with its asset library filtered by :attr:`licenses`."""
        from sceneforge.scenarios.world.environments import load_frozen_env  # pydantic+shapely, ~90 ms: off `--help`

        return self.memo(("env", name), lambda: load_frozen_env(self.env_files, name, licenses=self.licenses))

    @classmethod
    def from_dict(cls, raw: dict, source: str = "config") -> "SparrtaConfig":
        """Validate a plain dict (YAML file + flags); errors name ``source`` and the field."""
        return super().from_dict(raw, source)

    def check(self, source: str) -> None:
        _check(self, source)

    def complete(self, source: str) -> "SparrtaConfig":
        """The environments' content, read once (CLI, Python API) or checked when recorded."""
        from sceneforge.scenarios.world.environments import freeze_envs  # pydantic+shapely, ~90 ms: off `--help`

        if self.env_files is None:  # a user's config: today's environments and quota tables
            done = replace(self, env_files=freeze_envs(self.envs, f"{source}: envs"))
            return replace(done, quota_tables=_quota_documents(done, source), quota_table_files=None)
        if self.quota_table_files:  # a recorded config holds the tables themselves
            raise ConfigError(f"{source}: quota_table_files is read when a job starts; a recorded config has quota_tables")
        _check_frozen(self.env_files, source)
        _check_quotas(self.quota_tables, source)
        return self

    def quota(self, env: str, task: str, triple: str):
        """The layout-quota table (quotas.QuotaTable) of (env, task, triple), or None."""
        doc = (self.quota_tables or {}).get(env) or {}
        d = doc.get("tables", {}).get(task, {}).get(triple)
        return None if d is None else self.memo(("quota", env, task, triple), lambda: QuotaTable.from_dict(d))


def _quota_documents(cfg: SparrtaConfig, source: str) -> dict | None:
    """The quota documents of the config's environments for ``decorrelated`` jobs with allo: the
    user's (``quota_table_files``, checked against each environment's sha256), else the shipped
    one calibrated for its content; None when there is none (the field is then left out). An
    environment left without one is logged once here, with the command that calibrates a table:
    its allo views then get no quota, which must not pass unnoticed (the card says it too)."""
    quotas_apply = cfg.camera_policy == "decorrelated" and "allo" in cfg.tasks
    if cfg.quota_table_files and not quotas_apply:
        raise ConfigError(
            f"{source}: quota_table_files applies to camera_policy decorrelated with task allo (layout quotas), "
            f"got camera_policy {cfg.camera_policy} and tasks {list(cfg.tasks)}"
        )
    if not quotas_apply:
        return None
    docs = {name: shipped_document(name, e["sha256"]) for name, e in cfg.env_files.items()}
    given: dict[str, str] = {}
    for path in cfg.quota_table_files or ():
        doc = read_document(path, cfg.env_files, source)
        if doc["env"] in given:
            raise ConfigError(f"{source}: quota_table_files: {given[doc['env']]} and {path} are both for {doc['env']!r}")
        given[doc["env"]], docs[doc["env"]] = path, doc
    for name, e in cfg.env_files.items():
        if docs[name] is None:
            log.warning("%s", no_table_reason(name, e))
    docs = {k: v for k, v in docs.items() if v is not None}
    return docs or None


def _check_quotas(docs, source: str) -> None:
    """A recorded ``quota_tables`` must be ``{env: {"tables": {task: {triple: table}}}}``."""
    ok = docs is None or (
        isinstance(docs, dict) and all(isinstance(d, dict) and isinstance(d.get("tables"), dict) for d in docs.values())
    )
    if not ok:
        raise ConfigError(f"{source}: quota_tables is damaged (it records the layout-quota tables per environment)")


def parse_config(raw: dict, source: str = "config") -> SparrtaConfig:
    """Validate a plain dict (CLI or YAML); every error names ``source`` and the field."""
    return SparrtaConfig.from_dict(raw, source)


def _check_frozen(files, source: str) -> None:
    """A recorded ``env_files`` (job.json, or a worker's config) must be intact."""
    import hashlib

    ok = (
        isinstance(files, dict)
        and files
        and all(
            isinstance(e, dict)
            and isinstance(e.get("yaml"), str)
            and hashlib.sha256(e["yaml"].encode()).hexdigest() == e.get("sha256")
            for e in files.values()
        )
    )
    if not ok:
        raise ConfigError(f"{source}: env_files is damaged (it records the environments' YAML and their sha256)")


def _check(c: SparrtaConfig, src: str) -> None:
    def need(ok: bool, field: str, what: str) -> None:
        if not ok:
            raise ConfigError(f"{src}: {field} {what}, got {getattr(c, field)!r}")

    need(bool(c.envs), "envs", "must name at least one environment")
    need(isinstance(c.characters, bool), "characters", "must be true or false")
    need(c.character_props == "auto" or c.characters, "character_props", "needs characters: true (--characters)")
    need(
        c.licenses is None or (bool(c.licenses) and all(x.strip() for x in c.licenses)),
        "licenses",
        "must be a non-empty list of license families, e.g. [cc0, cc-by]",
    )
    if c.licenses:  # `--licenses gpl`: name the licence before anything is written
        from sceneforge.assets_manifest.library import check_licenses_known  # trimesh/scipy, ~0.6 s: off `--help`

        check_licenses_known(tuple(c.licenses))
    need(
        bool(c.tasks) and all(t in TASKS for t in c.tasks) and len(set(c.tasks)) == len(c.tasks),
        "tasks",
        f"must be distinct values of {TASKS}",
    )
    # one field's range or choices is its option() (n, seed, jpeg_quality, image_format, layout, ...);
    # here: the rules option() cannot say
    check_image_size(c.image_size, src)  # the one range of every config (core/config_names.py)
    need(
        c.camera_policy == "jitter" or c.aim_jitter_deg in (0.0, 15.0),
        "aim_jitter_deg",
        f"applies to camera_policy jitter only (camera_policy {c.camera_policy} aims without jitter)",
    )
    need(
        c.split_pattern is None or (0 < len(c.split_pattern) <= 100 and set(c.split_pattern) == set(SPLITS)),
        "split_pattern",
        "must be a list of up to 100 of train/val/test naming each at least once, e.g. [train, train, val, test, test]",
    )
    for f in ("margin_ego_deg", "margin_allo_deg"):
        if getattr(c, f) is not None:
            try:
                check_margin(getattr(c, f))
            except ConfigError as e:
                raise ConfigError(f"{src}: {f}: {e}") from None
    if c.renderer is not None:
        try:
            parse_spec(c.renderer)
        except ConfigError as e:
            raise ConfigError(f"{src}: renderer: {e}") from None
    need(
        c.min_bbox_px is None or 0 <= c.min_bbox_px <= c.size,
        "min_bbox_px",
        f"must be in [0, image_size={c.image_size}] (an object cannot be larger than the image)",
    )


@dataclass(frozen=True)
class Unit:
    """One (env, task, triple) dataset: ``n`` samples, global indices ``start .. start+n-1``."""

    env: str
    task: str
    triple_id: str
    source_class: str
    target_class: str
    viewpoint_class: str
    n: int
    start: int  # first global index
    label_offset: int  # position of this unit's first sample in its (env, task) label rotation

    def label(self, i: int) -> str:
        return LABELS[(self.label_offset + i) % len(LABELS)]


def resolve_units(cfg: SparrtaConfig, load_env: Callable, list_envs: Callable) -> list[Unit]:
    """Expand envs (``all``), tasks and triples into units, in global index order.

    With ``triples`` set, environments holding none of them are skipped; a triple id found in
    no selected environment is an error.
    """
    names = list(list_envs()) if list(cfg.envs) == ["all"] else list(cfg.envs)
    units: list[Unit] = []
    start, seen, available = 0, set(), set()
    for name in names:
        env = load_env(name)
        available |= {t.id for t in env.triples}
        triples = [t for t in env.triples if not cfg.triples or t.id in cfg.triples]
        seen |= {t.id for t in triples}
        for task in cfg.tasks:
            start = _add_units(units, env.name, task, triples, cfg.n, start)
    missing = sorted(set(cfg.triples or ()) - seen)
    if missing:
        raise ConfigError(
            f"triples: {', '.join(missing)} not in environment(s) {', '.join(names)}; available: {', '.join(sorted(available))}"
        )
    if not units:
        raise ConfigError(f"envs: no object triples in {', '.join(names)}")
    return units


def _add_units(units: list, env: str, task: str, triples: list, n_total: int, start: int) -> int:
    offset = 0
    for t, tri in enumerate(triples):
        n = n_total // len(triples) + (1 if t < n_total % len(triples) else 0)
        if n:
            units.append(
                Unit(
                    env,
                    task,
                    tri.id,
                    tri.source_class,
                    tri.target_class,
                    getattr(tri, "viewpoint_class", "human") or "human",
                    n,
                    start,
                    offset,
                )
            )
        start += n
        offset += n
    return start


def locate(units: list[Unit], index: int) -> tuple[Unit, int]:
    """Global index → (unit, index within the unit)."""
    for u in units:
        if u.start <= index < u.start + u.n:
            return u, index - u.start
    raise ConfigError(f"sample index {index} is outside the job (0..{units[-1].start + units[-1].n - 1})")
