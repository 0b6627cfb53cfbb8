"""Environments as YAML: look (ground, sky, sun), background clutter, object triples, sampling.

    >>> from scenarios.world.environments import load_env, list_envs
    >>> env = load_env("desert")              # a shipped name, or a path to a user YAML file
    >>> [t.id for t in env.triples]
    ['rock_truck', 'cactus_camel', 'barrel_camel']
    >>> actors = env.clutter(np.random.default_rng(0), keep_out=[(0, 0, 800)])

The five shipped environments reproduce SpaRRTa's (Desert, Forest, Winter Town, Bridge, City),
including its difficulty ordering: clutter density grows from the sparse desert to the city.
Clutter sits in a *ring* around the sampling area so it frames the scene without landing on the
labelled objects; the sampler still checks visibility, so dense rings cost acceptance rate, which
is the point. The schema is documented with a complete example in ``docs/environments.md``.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np
from pydantic import ValidationError
from shapely.geometry import Point

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Actor, Ground, Rotator, Sky, Sun, Transform, instance_color
from sceneforge.engine.world_dict import apply_world, world_to_dict
from sceneforge.scenarios.world.env_schema import MAX_ENV_ACTORS, MAX_ENV_FILE_BYTES, EnvSpec, Landmark
from sceneforge.scenarios.world.occupancy import Occupancy
from sceneforge.core.suggest import did_you_mean
from sceneforge.scenarios.world.placement import Site, footprint_radius, ground_z_under, pick_variants, place_group

ENVS_DIR = Path(__file__).parents[1] / "envs"  # scenarios/envs
CLUTTER_COLOR_BASE = 1000  # instance_color index offset for clutter (labelled objects use 0..)
log = logging.getLogger(__name__)


class Environment:
    """A loaded environment; see the module docstring."""

    def __init__(self, spec: EnvSpec, path: Path, library=None, licenses=None):
        self.spec, self.path, self._library = spec, path, library
        self.licenses = tuple(licenses) if licenses else None
        self.name = spec.name
        self.triples = list(spec.triples)
        self.sampling = spec.sampling

    @property
    def library(self):
        """The asset library clutter draws from: given, or default + the env's own manifests."""
        if self._library is None:
            # trimesh/scipy, ~0.6 s: only clutter needs the asset library
            from sceneforge.assets_manifest.library import shared_default_library

            self._library = shared_default_library(tuple(self.asset_packs()), self.licenses)
        return self._library

    def asset_packs(self) -> list[str]:
        """The environment's own asset-pack manifests as absolute paths (what servers must load)."""
        return [str((self.path.parent / a).resolve()) for a in self.spec.assets]

    @property
    def ground(self) -> Ground:
        return self.spec.ground

    @property
    def sun_obj(self) -> Sun:
        return self.spec.sun

    @property
    def sky_obj(self) -> Sky:
        return self.spec.sky

    @property
    def world(self) -> dict:
        """JSON-able dict for ``vset /sceneforge/world`` (engine.world's sections and field names);
        per-sample looks: :func:`scenarios.world.look.draw_look`."""
        s = self.spec
        return world_to_dict(self.name, sun=s.sun, sky=s.sky, ground=s.ground, fog=s.fog, look=s.look)

    def apply_to(self, scene) -> None:
        """Give an in-process :class:`engine.world.Scene` this environment's world."""
        apply_world(scene, self.world)

    def classes(self) -> set[str]:
        """Every asset class the environment uses (triples, clutter, landmarks)."""
        out = {c for t in self.triples for c in (t.source_class, t.target_class, t.viewpoint_class)}
        out |= {c for g in self.spec.clutter for c in g.classes}
        return out | {lm.cls for lm in self.spec.landmarks}

    def variants(self, cls: str, library=None) -> list[str]:
        """Asset ids of ``cls`` for this environment: none carrying an ``exclude_style_tags`` tag;
        of those, the ones carrying one of ``style_tags`` when the class has any (snowy trees in
        Winter Town), else all of them (sorted ids)."""
        return pick_variants(library or self.library, cls, self.spec.style_tags, self.spec.exclude_style_tags)

    def clutter(self, rng: np.random.Generator, keep_out=(), library=None) -> list[Actor]:
        """Background actors: landmarks, then each clutter group; deterministic given ``rng``.

        ``keep_out`` is a list of ``(x, y, r)`` discs (cm) no clutter footprint may touch (the
        labelled objects, the camera). Groups honour their ring, ``zones`` (``avoid``/``within``)
        and ``lines`` (``along``): scenarios/world/placement.py. Objects that find no free spot in 40
        tries are dropped.
        """
        lib = library or self.library
        occupied = Occupancy(keep_out)
        actors = [self._landmark(lm, k, lib) for k, lm in enumerate(self.spec.landmarks)]
        for lm, a in zip(self.spec.landmarks, actors):
            if not lm.flat:
                r = footprint_radius(lib, a.asset_id) * lm.scale
                occupied.add(Point(*lm.location_cm), r, *lm.location_cm, r)
        for k, group in enumerate(self.spec.clutter):
            for asset_id, x, y, yaw, s in place_group(
                group,
                rng,
                lib,
                occupied,
                self.spec.sampling.centre_cm,
                self.spec.style_tags,
                self._geometry(),
                k,
                self.spec.exclude_style_tags,
            ):
                actors.append(self._actor(len(actors), asset_id, x, y, yaw, s, lib))
        return actors

    @functools.cached_property
    def _geometry_cache(self) -> Site:
        return Site(self.spec.zones, self.spec.lines)

    def _geometry(self) -> Site:
        """Zones (rectangles + their shapely union) and lines as a placement.Site, built once per
        environment (with the union of each group's zone list)."""
        return self._geometry_cache

    def _landmark(self, lm: Landmark, k: int, lib) -> Actor:
        if lm.flat:  # lies on the ground as it is: no footprint search, z = 0
            return Actor(
                f"clutter_{k:03d}",
                lib.resolve(lm.cls),
                Transform((*lm.location_cm, 0.0), Rotator(0.0, lm.yaw, 0.0), (lm.scale,) * 3),
                color=instance_color(CLUTTER_COLOR_BASE + k),
            )
        return self._actor(k, lib.resolve(lm.cls), *lm.location_cm, lm.yaw, lm.scale, lib)

    def _actor(self, k: int, asset_id: str, x: float, y: float, yaw: float, s: float, lib) -> Actor:
        r = footprint_radius(lib, asset_id) * s
        z = ground_z_under(self.ground, x, y, r)
        return Actor(
            f"clutter_{k:03d}",
            asset_id,
            Transform((x, y, z), Rotator(0.0, yaw, 0.0), (s, s, s)),
            color=instance_color(CLUTTER_COLOR_BASE + k),
        )


def list_envs() -> list[str]:
    """Names of the shipped environments."""
    return sorted(p.stem for p in ENVS_DIR.glob("*.yaml"))


def is_explicit_path(ref: str | Path) -> bool:
    """A reference that can only mean a file: it ends in ``.yaml``/``.yml`` or has a directory part
    (``./desert``, ``envs/mine``). Anything else is first a shipped environment's name."""
    p = Path(ref)
    return p.suffix in (".yaml", ".yml") or len(p.parts) > 1 or "/" in str(ref) or str(ref).startswith(".")


def env_path(name_or_path: str | Path) -> Path:
    """The file an environment reference names. Shipped names win over files in the working
    directory (issue 39: a file ``./desert`` silently replaced the shipped ``desert``, and a
    directory ``desert/``, which every dataset root has, gave "Is a directory"); write
    ``./desert`` or ``desert.yaml`` to mean the file. A bare name that is not shipped may still
    name a file here."""
    p = Path(name_or_path)
    if is_explicit_path(name_or_path):
        return p
    shipped = ENVS_DIR / f"{name_or_path}.yaml"
    if shipped.exists():
        if p.is_file():
            log.warning(
                "environment %r is the shipped one, not the file ./%s (write ./%s to use the file)", str(name_or_path), p, p
            )
        return shipped
    if p.is_file():
        return p
    if p.is_dir():
        raise ConfigError(
            f"environment {str(name_or_path)!r}: ./{p} is a directory, not an environment file; shipped: {', '.join(list_envs())}"
        )
    import difflib

    close = difflib.get_close_matches(str(name_or_path), list_envs(), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(
        f"unknown environment {str(name_or_path)!r}; {hint}shipped: {', '.join(list_envs())} (or give a path to a .yaml file)"
    )


def freeze_envs(refs, source: str = "envs") -> dict[str, dict]:
    """Environment references (names, paths, or ``["all"]``) → their *content*, keyed by name.

    ``{name: {"source": ref, "sha256": hex, "dir": absolute dir of the file (None for a shipped
    one), "yaml": text}}``.
    A job records this in its config, so an environment is its file's content everywhere: the
    fingerprint changes when the file does, and workers (local or on Ray nodes) rebuild the
    environment from the text instead of looking a name up (a user file named like a shipped
    environment can never be swapped for it). ``dir`` resolves the file's relative asset packs.
    """
    import hashlib

    refs = list(list_envs()) if list(refs) == ["all"] else list(refs)
    out: dict[str, dict] = {}
    for ref in refs:
        path = env_path(ref)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{source}: {path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
        env = load_env(path, text=text)
        if env.name in out:
            raise ConfigError(
                f"{source}: two environments are named {env.name!r} ({out[env.name]['source']} "
                f"and {ref}); rename one (its 'name:' field)"
            )
        out[env.name] = {
            "source": str(ref),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "dir": _recorded_dir(path),
            "yaml": text,
        }
    return out


def load_frozen_env(frozen: dict, key: str, library=None, licenses=None) -> Environment:
    """The environment ``key`` (its name or the reference it was given as) from :func:`freeze_envs`."""
    entry = frozen.get(key) or next((e for e in frozen.values() if e.get("source") == key), None)
    if entry is None:
        raise ConfigError(f"environment {key!r} is not part of this job (it has {', '.join(sorted(frozen))})")
    name = key if key in frozen else next(n for n, e in frozen.items() if e is entry)
    folder = Path(entry["dir"]) if entry.get("dir") else ENVS_DIR
    return load_env(folder / f"{name}.yaml", library, licenses, text=entry["yaml"])


def _recorded_dir(path: Path) -> str | None:
    """Where a frozen environment's relative asset packs live: None for a shipped environment
    (resolved to this installation's envs/ when loaded), so the record — and with it the job's
    fingerprint, job.json and the dataset card — does not depend on where sceneforge is installed."""
    folder = path.resolve().parent
    return None if folder == ENVS_DIR.resolve() else str(folder)


def _check_file_size(path: Path, text: str | None) -> None:
    """Refuse an environment file over :data:`MAX_ENV_FILE_BYTES` before parsing it."""
    try:
        size = len(text.encode("utf-8")) if text is not None else path.stat().st_size
    except OSError:
        return  # read_yaml names the file and the reason
    if size > MAX_ENV_FILE_BYTES:
        raise ConfigError(
            f"{path}: {size} bytes; an environment file may have at most {MAX_ENV_FILE_BYTES} "
            f"(at most {MAX_ENV_ACTORS} background actors per sample)"
        )


# (content, path) -> validated spec: a job's config records its environments' content
# (freeze_envs) and every step rebuilds them from it, so each file's YAML is parsed once per
# process, not once per step (issue 51: 10 parses for a 4-sample job before; a test counts them)
_SPECS: dict[tuple[str, str], EnvSpec] = {}


def load_env(name_or_path: str | Path, library=None, licenses=None, *, text: str | None = None) -> Environment:
    """Load a shipped environment by name or a user YAML by path; errors name file:line: field.

    With ``text`` the YAML is parsed from it and the path only names the file in messages and
    anchors relative asset packs (what :func:`load_frozen_env` does in workers)."""
    # trimesh/scipy, ~0.6 s: only when an env is parsed (list_envs, configs need none)
    from sceneforge.assets_manifest.schema import KNOWN_CLASSES, read_yaml, read_yaml_text, validation_message

    path = Path(name_or_path) if text is not None else env_path(name_or_path)
    _check_file_size(path, text)
    spec = _SPECS.get((text, str(path))) if text is not None else None
    if spec is None:
        data, root = read_yaml_text(text, path) if text is not None else read_yaml(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: an environment must be a mapping (name, triples, ...)")
        try:
            spec = EnvSpec.model_validate(data)
        except ValidationError as e:
            raise ConfigError(validation_message(path, e, root, data)) from None
        if text is not None:
            if len(_SPECS) >= 64:
                _SPECS.clear()
            _SPECS[(text, str(path))] = spec
    env = Environment(spec, path, library, licenses)
    # The classes accepted are the library's, what `sceneforge assets list` shows: built-in ones and
    # those a pack declares (`water`, `street`: procedural.yaml's `classes:`). KNOWN_CLASSES (the
    # built-in list) only spares loading the library (~0.6 s) when every name is in it; it lacks
    # the declared ones, which is why `class: water` was refused (issue 47).
    unknown = sorted(env.classes() - (set() if library is not None or spec.assets else set(KNOWN_CLASSES)))
    if unknown:  # declared classes, or asset ids pinning one asset (``source: proc_truck_blue``)
        lib_classes = set(env.library.classes())
        unknown = sorted(set(unknown) - lib_classes - set(env.library.ids()))
        if unknown:
            hint = did_you_mean(unknown[0], lib_classes)
            raise ConfigError(
                f"{path}: unknown class(es) or asset id(s) {', '.join(unknown)}; {hint + ' ' if hint else ''}"
                f"known classes: {', '.join(sorted(lib_classes))} (sceneforge assets list)"
            )
    return env
