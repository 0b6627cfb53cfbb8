"""What one SpaRRTa sample leaves on disk: file names, SpaRRTa's params, the table row, the record.

Layout under the output directory (one folder per env × task × triple, SpaRRTa's file names)::

    <env>/<task>/<triple>/img_NNNN.jpg      the image (png with image_format=png)
    <env>/<task>/<triple>/params_NNNN.json  SpaRRTa's schema + our keys
    <env>/<task>/<triple>/mask_NNNN.png     optional instance mask (colours in params mask_colors)
    <env>/<task>/<triple>/depth_NNNN.npy    optional ray depth, float32 cm
    records/<env>/<task>/<triple>/NNNNNN.json  written last: the sample is complete
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from sceneforge.core.paths import check_component, confined
from sceneforge.scenarios.sampling.relations import TASK_OBSERVER, heading_angle_and_cross
from sceneforge.scenarios.output.scene_graph import graph_json
from sceneforge.scenarios.sparrta.characters import params_block as characters_block
from sceneforge.scenarios.sparrta.config import SparrtaConfig, Unit
from sceneforge.scenarios.output.writers import (
    PreEncoded,
    atomic_write_bytes,
    atomic_write_json,
    display_label,
    dumps,
    encode_image,
    flatten,
    intrinsics,
    kind_bytes,
    kind_file,
    nested_json,
    params_json,
)

LABELLED = ("source", "target", "human")


def unit_dir(unit: Unit) -> str:
    """``env/task/triple``: each part checked as one path component (they come from user files)."""
    return "/".join(
        check_component(v, what)
        for v, what in ((unit.env, "environment name"), (unit.task, "task"), (unit.triple_id, "triple id"))
    )


def file_names(unit: Unit, i: int, cfg: SparrtaConfig) -> dict[str, str]:
    """Relative paths (POSIX) of a sample's files, by kind."""
    d, n = unit_dir(unit), f"{i:04d}"
    files = {"image": f"{d}/img_{n}.{cfg.image_format}", "params": f"{d}/params_{n}.json", "scene": f"{d}/scene_{n}.json"}
    if cfg.masks:
        files["mask"] = f"{d}/mask_{n}.{kind_file('object_mask')}"
    if cfg.depth:
        files["depth"] = f"{d}/depth_{n}.{kind_file('depth')}"
    return files


def record_path(out: Path, unit: Unit, i: int) -> Path:
    return Path(out) / "records" / unit_dir(unit) / f"{i:06d}.json"


def load_record(out: Path, unit: Unit, i: int) -> dict | None:
    """The sample's record if it and every file it lists exist, else None (to be redone)."""
    p = record_path(out, unit, i)
    try:
        rec = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if not all((Path(out) / f).is_file() for f in rec.get("files", {}).values()):
        return None
    return rec


def objects_of(group, view) -> dict:
    """Labelled objects of a sample (source, target, and the human for allo) as Placed."""
    objs = {"source": group.source, "target": group.target}
    if view.human is not None:
        objs["human"] = view.human
    return objs


def build_params(
    cfg: SparrtaConfig, unit: Unit, i: int, st, group, view, vis: dict, colors: dict, all_colors: dict | None = None
) -> dict:
    """SpaRRTa's params file plus our keys (its loader ignores keys it does not know).

    ``colors``: the labelled objects' instance colours; ``all_colors``: the server's colours of
    every actor of the scene group (clutter too), which the clutter entries record."""
    objs = objects_of(group, view)
    actors = {
        f"/sceneforge/actors/{n}": {"cls": p.shape.cls, "location": p.location, "rotation": (0.0, p.yaw, 0.0)}
        for n, p in objs.items()
    }
    extra = {
        "task": unit.task,
        "label": unit.label(i),
        "margin_deg": st.margin_deg,
        # labels of the drawn assets' classes (a triple may pin an asset id instead of a class)
        "source_label": display_label(group.source.shape.cls),
        "target_label": display_label(group.target.shape.cls),
        "viewpoint_label": "Camera" if view.human is None else display_label(view.human.shape.cls),
        "angle_deg": view.angle_deg,
        "seed": cfg.seed,
        "index": i,
        "assets": {n: p.shape.asset_id for n, p in objs.items()},
        "mask_colors": {n: list(c) for n, c in colors.items()},
        "visibility": {n: _vis(v) for n, v in vis.items()},
        "clutter": None,
    }
    extra.update(policy_fields(cfg, unit, st, group, view))
    drawn = characters_block(objs)  # skinned characters (opt-in): pose and facing; absent otherwise
    if drawn:
        extra["characters"] = drawn
    clutter, text = _clutter_block(group, all_colors or {})
    params = PreEncoded(params_json(unit.env, unit.triple_id, view.camera, actors, {**extra, "clutter": clutter}))
    params.static = ({"clutter": clutter}, {"clutter": text}, 0)  # the same in every sample of the scene
    return params


def policy_fields(cfg: SparrtaConfig, unit: Unit, st, group, view) -> dict:
    """What ``camera_policy: decorrelated`` records besides the older keys (params and table row;
    nothing for the other policies, whose files stay byte-identical): the screen point its anchor
    was aimed at; on ego the unsigned angle of target - source from the camera's *heading*
    (``heading_angle_deg``; the label's own ``angle_deg`` is from the camera→source line) and
    the margin both must clear; on allo the figure's facing (its yaw, UE degrees) and that facing
    relative to the figure→source line (signed, + = the source is to the figure's right)."""
    if cfg.camera_policy != "decorrelated":
        return {}
    out: dict = {"anchor": st.anchor, "anchor_screen": list(st.anchor_screen) if st.anchor_screen else None}
    if unit.task == "ego":
        angle, _ = heading_angle_and_cross(view.camera.rotation.yaw, group.source.location, group.target.location)
        out.update({"heading_angle_deg": angle, "margin_heading_deg": st.margin_deg})
    elif view.human is not None:
        h, src = view.human, group.source
        to_source = math.degrees(math.atan2(src.y - h.y, src.x - h.x))
        out.update({"figure_facing_deg": h.yaw, "figure_facing_to_source_deg": _wrap_deg(to_source - h.yaw)})
    return out


def _wrap_deg(d: float) -> float:
    """Angle in (-180, 180]."""
    d = math.fmod(d, 360.0)
    return d - 360.0 if d > 180.0 else d + 360.0 if d <= -180.0 else d


def _clutter_block(group, server_colors: dict) -> tuple[list, str]:
    """The scene's clutter entries and their JSON text, made once per scene group. Colours are
    the server's (what the mask draws) where known, else the actor's spawn-order colour."""
    if "params_clutter" not in group.regions:
        clutter = [clutter_entry(a, server_colors.get(a.name)) for a in group.actors[2:]]
        group.regions["params_clutter"] = (clutter, nested_json(clutter, 1))
    return group.regions["params_clutter"]


def clutter_entry(actor, color: tuple[int, int, int] | None = None) -> dict:
    """Everything needed to spawn a clutter actor again (its scale too: environments scale
    clutter), and its instance colour in the mask (``color``, the server's, else the actor's)."""
    t = actor.transform
    return {
        "name": actor.name,
        "asset": actor.asset_id,
        "location": list(t.location),
        "yaw": t.rotation.yaw,
        "rotation": list(t.rotation.as_tuple()),
        "scale": list(t.scale),
        "color": list(color if color is not None else actor.color),
    }


def _vis(pc) -> dict:
    return {
        "visible": int(pc.visible),
        "unoccluded": int(pc.unoccluded),
        "ratio": pc.ratio,
        "bbox": list(pc.bbox) if pc.bbox else None,
    }


def build_row(cfg: SparrtaConfig, unit: Unit, i: int, st, group, view, vis: dict, files: dict) -> dict:
    """One flat table row: identifiers, label, every pose (UE cm/deg), intrinsics, visibility."""
    cam = view.camera
    row = {
        "index": unit.start + i,
        "env": unit.env,
        "task": unit.task,
        "triple_id": unit.triple_id,
        "unit_index": i,
        "label": unit.label(i),
        "seed": cfg.seed,
        "viewpoint": TASK_OBSERVER[unit.task],
        "margin_deg": st.margin_deg,
        "angle_deg": view.angle_deg,
        "source_class": unit.source_class,
        "target_class": unit.target_class,
    }
    row.update({k: v for k, v in policy_fields(cfg, unit, st, group, view).items() if not k.startswith("anchor")})
    objs = objects_of(group, view)
    for name in LABELLED:
        p = objs.get(name)
        row.update({f"{name}_asset": p.shape.asset_id if p else None})
        row.update(
            {
                f"{name}_{k}": (v if p else None)
                for k, v in zip(("x", "y", "z", "yaw"), (p.x, p.y, p.z, p.yaw) if p else (0, 0, 0, 0))
            }
        )
        pc = vis.get(name)
        box = list(pc.bbox) if pc and pc.bbox else [None] * 4
        row.update(
            {
                f"{name}_visible": pc.visible if pc else None,
                f"{name}_unoccluded": pc.unoccluded if pc else None,
                f"{name}_visible_ratio": pc.ratio if pc else None,
            }
        )
        row.update({f"{name}_bbox_{k}": v for k, v in zip(("x0", "y0", "x1", "y1"), box)})
    row.update(
        flatten(
            "camera",
            {
                "x": cam.location[0],
                "y": cam.location[1],
                "z": cam.location[2],
                "pitch": cam.rotation.pitch,
                "yaw": cam.rotation.yaw,
                "roll": cam.rotation.roll,
                "width": cam.width,
                "height": cam.height,
                "focal_px": cam.focal_px,
                **intrinsics(cam),
            },
        )
    )
    row.update({f"{k}_file": v for k, v in files.items() if k != "image"})
    row["file_name"] = files["image"]
    return row


def write_sample(
    writer, out: Path, cfg: SparrtaConfig, unit: Unit, i: int, group, view, counts, renders: int, img: dict, described: dict
) -> dict:
    """Queue on ``writer`` (a BackgroundWriter) the rendered image, params, scene graph (built
    there: ``described["graph"]`` is the function ``Session.describe`` bound), optional
    mask/depth, then the record (last: resume relies on it); returns the record."""
    files, params, graph = described["files"], described["params"], described["graph"]
    rec = {
        "index": unit.start + i,
        "row": described["row"],
        "files": files,
        "rejections": dict(sorted(counts.items())),
        "renders": renders,
        "assets": sorted({a.asset_id for a in group.actors} | ({view.human.shape.asset_id} if view.human else set())),
    }
    record = record_path(Path("."), unit, i)

    def encode_and_write() -> None:  # on the writer thread: the record last (resume relies on it)
        scene = graph_json(graph()).encode()  # first: its failure writes nothing
        atomic_write_bytes(confined(out, files["image"]), encode_image(img["lit"], cfg.image_format, cfg.jpeg_quality))
        if cfg.masks:
            atomic_write_bytes(confined(out, files["mask"]), kind_bytes("object_mask", img["object_mask"]))
        if cfg.depth:
            atomic_write_bytes(confined(out, files["depth"]), kind_bytes("depth", img["depth"]))
        atomic_write_bytes(confined(out, files["params"]), dumps(params).encode())
        atomic_write_bytes(confined(out, files["scene"]), scene)
        atomic_write_json(confined(out, record), rec)

    writer.submit(encode_and_write)
    return rec
