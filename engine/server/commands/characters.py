"""``vset /sceneforge/character_poses {json}``: pose skinned characters (issue 49 item 2).

    vset /sceneforge/character_poses {"walker":{"clip":"walk","phase":0.375},"horse":{"clip":"run","phase":0.5}}

Each named actor must be a character (spawned with a ``character:<class>:<variant>:<clip>:<k>[:props]``
asset id, engine/server/characters.py); it keeps its class, variant, props, transform and instance id
and takes the clip (walk, run, idle) at the phase (cycles, any finite number: it wraps; quantised
to 1/256). All-or-nothing like ``/sceneforge/poses``: everything is checked before the scene
changes. A JSON argument as the other ``/sceneforge`` extensions (no spaces).
"""

from __future__ import annotations

import math

from sceneforge.core.errors import CommandError, SceneforgeError
from sceneforge.engine.server import characters as ch
from sceneforge.engine.server.commands.ext import _as_dict, _json
from sceneforge.engine.server.commands.table import command
from sceneforge.engine.server.state import ServerState


@command("vset /sceneforge/character_poses [json]", raw=True)
def set_character_poses(state: ServerState, args: list[str]) -> str:
    data = _as_dict(_json(args[0], "character_poses"), "character_poses")
    updates = {}
    for name, pose in data.items():
        where = f"character_poses.{name}"
        pose = _as_dict(pose, where)
        unknown = sorted(set(pose) - {"clip", "phase"})
        if unknown or "clip" not in pose or "phase" not in pose:
            raise CommandError(f"{where}: needs 'clip' and 'phase'; unknown field(s) {unknown}")
        actor = state.actor(name)
        if not ch.is_character(actor.asset_id):
            raise CommandError(f"{where}: {name!r} is not a character (asset {actor.asset_id!r})")
        clip, phase = pose["clip"], pose["phase"]
        if clip not in ch.CLIPS:
            raise CommandError(f"{where}.clip: expected one of {', '.join(ch.CLIPS)}, got {str(clip)[:40]!r}")
        if isinstance(phase, bool) or not isinstance(phase, (int, float)) or not math.isfinite(phase) or abs(phase) > 1e9:
            raise CommandError(f"{where}.phase: expected a finite number of cycles, got {str(phase)[:40]!r}")
        cls, variant, _clip, _ph = ch.parse(actor.asset_id)
        new = ch.posed_id(cls, variant, clip, float(phase), ch.has_props(actor.asset_id))  # keeps its props
        try:
            state.catalog.resolve(new)
        except SceneforgeError as e:
            raise CommandError(f"{where}: {e}") from None
        updates[name] = new
    for name, asset_id in updates.items():
        state.scene.replace_actor(name, asset_id=asset_id)
    return "ok"
