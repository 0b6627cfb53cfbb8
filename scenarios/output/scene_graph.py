"""A metric 3-D scene graph of one rendered view: every object's pose, oriented 3-D box, 2-D box
and visibility, the camera, the lighting, and pairwise relations. Pure (no renderer): built from
the actors the scenario spawned, their assets' sizes, the camera and the server's pixel counts.

Units and frames are UnrealCV's (cm; left-handed X forward, Y right, Z up; degrees). An asset's
mesh is normalised with its base on z = 0 and centred in XY (core.meshes), so its local box is
``[-L/2, L/2] × [-W/2, W/2] × [0, H]`` for ``size_cm = (L, W, H)``, scaled per axis by the actor.

Relations, for every ordered pair (a, b) — "where is b relative to a":

* ``distance_cm``: between 3-D box centres; ``horizontal_cm``: the same in the ground plane (XY);
* ``camera``: b's offset from a in the camera frame (right / up / farther, cm) and its dominant
  words ("left"/"right", "above"/"below", "closer"/"farther");
* ``object``: b's offset in a's own frame (forward / right / up, cm) and SpaRRTa's 4-way label
  from a's facing direction (front / back / left / right, 45° sectors);
* size ratios b/a of volume, height and longest side.

:func:`relations` gives every ordered pair of a view at once (per-object work once, pair tables),
the same dicts bit for bit as :func:`relation` per pair; ``scene_graph`` uses it.

Example::

    g = scene_graph(objects, camera, world=env.world, visibility=vis)
    g["objects"][0]["box3d"]["corners"]; g["relations"][0]["object"]["label"]
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from sceneforge.engine.world import Actor, Camera
from sceneforge.scenarios.output.writers import PreEncoded, dumps, nested_json
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.output import coco_rle

SCHEMA = "sceneforge.scene_graph/1"


@dataclass(frozen=True)
class SceneObject:
    """One actor plus what the graph needs about its asset (class, unscaled size)."""

    actor: Actor
    cls: str
    size_cm: tuple[float, float, float]
    role: str = "clutter"  # source / target / human / clutter: the scenario's name for it

    @property
    def name(self) -> str:
        return self.actor.name

    def extent_cm(self) -> np.ndarray:
        """Scaled (L, W, H) along the object's own axes."""
        return np.abs(np.asarray(self.size_cm, float) * np.asarray(self.actor.transform.scale, float))

    def local_corners(self) -> np.ndarray:
        l, w, h = (float(v) for v in self.size_cm)
        xs, ys, zs = (-l / 2, l / 2), (-w / 2, w / 2), (0.0, h)
        return np.array([[x, y, z] for x in xs for y in ys for z in zs])

    def corners(self) -> np.ndarray:
        """(8, 3) world corners of the oriented box; order: x-major, then y, then z."""
        return self.actor.transform.apply(self.local_corners())

    def centre(self) -> np.ndarray:
        return self.corners().mean(axis=0)

    @functools.cached_property
    def static(self) -> tuple[dict, dict, np.ndarray]:
        """:func:`_static_node` of this object, kept on the instance (hashing a frozen actor for
        the shared cache costs ~10 µs; a scenario that reuses its objects pays it once)."""
        return _static_node(self)


def _r(v, nd: int = 4):
    """``v`` (a number or a nested sequence of numbers) as Python floats rounded to ``nd`` places."""
    if isinstance(v, np.ndarray):
        # vectors and matrices directly (``tolist`` gives Python floats): the general recursion
        # took 30 µs for a box's 8 corners, this 19 (every object of every scene group has them)
        v = v.astype(float, copy=False)
        if v.ndim == 1:
            return [round(x, nd) for x in v.tolist()]
        if v.ndim == 2:
            return [[round(x, nd) for x in row] for row in v.tolist()]
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        if v and isinstance(v[0], (list, tuple, np.ndarray)):
            return [_r(x, nd) for x in v]
        return [round(float(x), nd) for x in v]
    return round(float(v), nd)


def projected_box(obj: SceneObject, cam: Camera) -> list[float] | None:
    """Image box of the projected 3-D box corners, clipped to the frame; None if the box is
    (partly) behind the camera's near plane or entirely outside the frame."""
    uv, depth = cam.project(obj.corners())
    if np.any(depth <= 1.0):
        return None
    x0, y0 = max(uv[:, 0].min(), 0.0), max(uv[:, 1].min(), 0.0)
    x1, y1 = min(uv[:, 0].max(), float(cam.width)), min(uv[:, 1].max(), float(cam.height))
    return _r([x0, y0, x1, y1], 3) if x1 > x0 and y1 > y0 else None


def camera_block(cam: Camera) -> dict:
    """Intrinsics (K, fov) and extrinsics (UE pose; world→camera rotation with rows forward,
    right, up; OpenGL view matrix) of the view."""
    axes = cam.rotation.matrix()
    return {
        "location": _r(cam.location),
        "rotation": _r(cam.rotation.as_tuple()),
        "fov_deg": _r(cam.fov_deg, 6),
        "width": int(cam.width),
        "height": int(cam.height),
        "focal_px": _r(cam.focal_px, 6),
        "K": _r(cam.intrinsics(), 6),
        "world_to_camera_axes": _r(axes.T, 8),
        "view_matrix_gl": _r(cam.view_matrix(), 6),
    }


class Node(PreEncoded):
    """An object's node (a plain dict to every reader) that also carries the JSON text of its
    camera-independent values (``static``: ``(head, {key: text}, level)``, see
    ``scenarios.output.writers.PreEncoded``)."""

    __slots__ = ()


@functools.lru_cache(maxsize=1024)
def _local_corners(size_cm: tuple[float, float, float]) -> np.ndarray:
    """``SceneObject.local_corners`` of an unscaled size (read-only: shared)."""
    l, w, h = size_cm
    xs, ys, zs = (-l / 2, l / 2), (-w / 2, w / 2), (0.0, h)
    out = np.array([[x, y, z] for x in xs for y in ys for z in zs])
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=8192)
def _static_node(obj: SceneObject) -> tuple[dict, dict, np.ndarray]:
    """The parts of an object's node that do not depend on the camera (pose, box), computed once
    per object: a scene's clutter is the same in every sample of its group, and rounding every
    corner of a hundred objects per sample was a third of a city sample's client time."""
    t = obj.actor.transform
    rot = t.rotation.matrix()  # once (Transform.apply's arithmetic, so the same corners)
    corners = _local_corners(tuple(float(v) for v in obj.size_cm)) * np.asarray(t.scale) @ rot.T + np.asarray(t.location)
    centre = corners.mean(axis=0)
    ext = obj.extent_cm()
    head = {
        "name": obj.name,
        "role": obj.role,
        "class": obj.cls,
        "asset": obj.actor.asset_id,
        "location": _r(t.location),
        "rotation": _r(t.rotation.as_tuple()),
        "scale": _r(t.scale, 6),
        "color": list(obj.actor.color),
        "box3d": {
            "centre": _r(centre),
            "size_cm": _r(ext),
            "yaw_deg": _r(t.rotation.yaw),
            "axes": _r(rot.T, 8),
            "corners": _r(corners, 3),
        },
        "volume_m3": _r(float(np.prod(ext)) / 1e6, 6),
    }
    texts = {k: nested_json(v, _NODE_LEVEL + 1) for k, v in head.items()}  # encoded once per object (graph_json)
    return head, {"corners": corners, "texts": texts}, centre


def recolored(obj: SceneObject, color) -> SceneObject:
    """``obj`` with another instance colour, its camera-independent node derived from ``obj``'s
    (only the colour differs) instead of computed again: a scenario can prepare its objects'
    nodes before the server has told it their colours (sparrta ``graph.group_objects``)."""
    import copy

    rgb = tuple(int(v) for v in color)
    if len(rgb) != 3 or not all(0 <= v <= 255 for v in rgb):  # as Actor checks it
        raise ConfigError(f"actor {obj.name}: color must be 3 ints in 0..255, got {color!r}")
    actor = copy.copy(obj.actor)  # the actor with only its colour changed (its other fields were
    object.__setattr__(actor, "color", rgb)  # validated when it was made; replace() re-checks all)
    out = SceneObject(actor, obj.cls, obj.size_cm, obj.role)
    head, static, centre = obj.static
    color = list(out.actor.color)
    out.__dict__["static"] = (
        {**head, "color": color},
        {**static, "texts": {**static["texts"], "color": nested_json(color, _NODE_LEVEL + 1)}},
        centre,
    )
    return out


def object_node(i: int, obj: SceneObject, cam: Camera, vis: Mapping | None) -> dict:
    return _object_nodes([obj], cam, {obj.name: vis} if vis is not None else {}, first_id=i)[0]


def _object_nodes(objs: list[SceneObject], cam: Camera, vis: Mapping, first_id: int = 0) -> list[dict]:
    """Every object's node; the camera-dependent numbers (camera frame, distance, projected box)
    of all objects come from one projection."""
    if not objs:
        return []
    statics = [o.static for o in objs]
    centres = np.array([c for _, _, c in statics])
    cam_c = cam.to_camera(centres).tolist()
    dists = np.linalg.norm(centres - np.asarray(cam.location), axis=1).tolist()
    corners = np.concatenate([st["corners"] for _, st, _ in statics])
    uv, depth = cam.project(corners)
    n = len(objs)
    uv, depth = uv.reshape(n, -1, 2), depth.reshape(n, -1)
    lo, hi, behind = uv.min(axis=1), uv.max(axis=1), np.any(depth <= 1.0, axis=1)
    w, h = float(cam.width), float(cam.height)
    nodes = []
    for k, (obj, (head, static, _)) in enumerate(zip(objs, statics)):
        x0, y0 = max(float(lo[k, 0]), 0.0), max(float(lo[k, 1]), 0.0)
        x1, y1 = min(float(hi[k, 0]), w), min(float(hi[k, 1]), h)
        box = None if behind[k] or not (x1 > x0 and y1 > y0) else [round(x0, 3), round(y0, 3), round(x1, 3), round(y1, 3)]
        f, r, u = cam_c[k]
        node = Node(
            {
                "id": first_id + k,
                **head,
                "box3d": dict(head["box3d"]),  # fresh dicts; lists never mutated
                "camera_frame": {"forward": round(f, 4), "right": round(r, 4), "up": round(u, 4)},
                "distance_to_camera_cm": round(dists[k], 4),
                "box2d_projected": box,
            }
        )
        v = vis.get(obj.name)
        if v is not None:
            node.update(
                {
                    "visible_px": int(v.get("visible", 0)),
                    "unoccluded_px": int(v.get("unoccluded", 0)),
                    "visible_ratio": _r(_ratio(v), 6),
                    "box2d": list(v["bbox"]) if v.get("bbox") else None,
                }
            )
        node.static = (head, static["texts"], _NODE_LEVEL)
        nodes.append(node)
    return nodes


def _ratio(vis: Mapping) -> float:
    u = int(vis.get("unoccluded", 0))
    return int(vis.get("visible", 0)) / u if u > 0 else 0.0


def four_way(forward: float, right: float) -> str:
    """front / back / left / right by 45° sectors around the +forward axis."""
    a = math.degrees(math.atan2(right, forward))
    if -45 <= a <= 45:
        return "front"
    if a >= 135 or a <= -135:
        return "back"
    return "right" if a > 0 else "left"


def relation(a: SceneObject, b: SceneObject, cam: Camera) -> dict:
    """Where ``b`` is relative to ``a`` (one ordered pair; the module docstring lists the fields).
    A whole view's pairs: :func:`relations` (the same dicts, ~7x faster: no per-pair numpy)."""
    ca, cb = a.centre(), b.centre()
    d = cb - ca
    cam_d = cam.to_camera(cb[None])[0] - cam.to_camera(ca[None])[0]
    own = d @ a.actor.transform.rotation.matrix()  # (forward, right, up) in a's frame
    ea, eb = a.extent_cm(), b.extent_cm()
    ratios = (float(np.prod(eb) / np.prod(ea)), float(eb[2] / ea[2]), float(eb.max() / ea.max()))
    return _relation_dict(a.name, b.name, d.tolist(), float(np.linalg.norm(d)), cam_d.tolist(), own.tolist(), ratios)


def relations(objs: list[SceneObject], cam: Camera) -> list[dict]:
    """:func:`relation` of every ordered pair ``(a, b)``, ``a is not b``, in ``for a: for b:`` order.

    Why not one :func:`relation` call per pair: each recomputes both boxes' corners, two camera
    transforms and a rotation matrix (~50 µs); a city view has 68 objects = 4,556 pairs (0.3 s a
    view). Here every per-object input is computed once, by the very call :func:`relation` makes,
    and the per-pair arithmetic runs on (N, N) tables whose every element is the same IEEE
    operation on the same operands (differences, quotients; the (1,3)@(3,3) and dot products as
    stacked ``matmul`` items of the same core shape and strides, i.e. the same BLAS call per item),
    so every float is bit-identical to :func:`relation`'s and the written JSON byte-identical.
    Rounding and the labels stay per pair in Python (``round`` and ``math.atan2`` differ from
    numpy's in the last bits). Units: cm, UE frame (left-handed, X forward, Y right, Z up)."""
    if not objs:
        return []
    t = _pair_tables(objs, cam)
    names = [o.name for o in objs]
    out = []
    for i, a in enumerate(objs):
        d, dist, cam_d, own = t["d"][i], t["dist"][i], t["cam_d"][i], t["own"][i]
        vol, height, longest = t["volume"][i], t["height"][i], t["longest"][i]
        for j, b in enumerate(objs):
            if a is not b:
                out.append(_relation_dict(names[i], names[j], d[j], dist[j], cam_d[j], own[j], (vol[j], height[j], longest[j])))
    return out


def _pair_tables(objs: list[SceneObject], cam: Camera) -> dict[str, list]:
    """Nested lists ``[i][j]`` of pair (a = objs[i], b = objs[j]) values: ``d`` = b − a (world cm),
    ``dist`` = |d|, ``cam_d`` = b − a in the camera frame (forward, right, up), ``own`` = d in a's
    frame, and the b / a size ratios. Per-object inputs by :func:`relation`'s own calls."""
    centres = np.array([o.centre() for o in objs])
    cam_c = np.array([cam.to_camera(c[None])[0] for c in centres])
    # each item laid out as Rotator.matrix() returns it (a transposed view): same BLAS call as d @ R
    rots = np.stack([o.actor.transform.rotation.matrix().T for o in objs]).transpose(0, 2, 1)
    ext = [o.extent_cm() for o in objs]
    vol = np.array([np.prod(e) for e in ext])
    height, longest = np.array([e[2] for e in ext]), np.array([e.max() for e in ext])
    d = centres[None, :, :] - centres[:, None, :]  # [i, j] = centre_j − centre_i
    own = np.matmul(d[:, :, None, :], rots[:, None])[:, :, 0]  # items: (1,3) @ (3,3), as d @ R
    dist = np.sqrt(np.matmul(d[:, :, None, :], d[:, :, :, None])[:, :, 0, 0])  # norm = sqrt(dot)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero-size box: inf/nan, as relation gives
        ratios = {k: (v[None, :] / v[:, None]).tolist() for k, v in (("volume", vol), ("height", height), ("longest", longest))}
    return {
        "d": d.tolist(),
        "dist": dist.tolist(),
        "cam_d": (cam_c[None, :, :] - cam_c[:, None, :]).tolist(),
        "own": own.tolist(),
        **ratios,
    }


def _relation_dict(
    a: str, b: str, d: list[float], dist: float, cam_d: list[float], own: list[float], ratios: tuple[float, float, float]
) -> dict:
    """The JSON of one pair from its numbers (Python floats): ``d`` world offset b − a (cm),
    ``cam_d`` camera-frame offset (forward, right, up), ``own`` offset in a's frame, ``ratios``
    b / a (volume, height, longest side). Rounded to 4 places (6 for ratios), as ``_r`` does."""
    return {
        "a": a,
        "b": b,
        "distance_cm": round(dist, 4),
        "horizontal_cm": round(math.hypot(d[0], d[1]), 4),
        "camera": {
            "right": round(cam_d[1], 4),
            "up": round(cam_d[2], 4),
            "farther": round(cam_d[0], 4),
            "horizontal": "right" if cam_d[1] > 0 else "left",
            "vertical": "above" if cam_d[2] > 0 else "below",
            "depth": "farther" if cam_d[0] > 0 else "closer",
            "label": four_way(cam_d[0], cam_d[1]),
        },
        "object": {
            "forward": round(own[0], 4),
            "right": round(own[1], 4),
            "up": round(own[2], 4),
            "azimuth_deg": round(math.degrees(math.atan2(own[1], own[0])), 4),
            "label": four_way(own[0], own[1]),
        },
        "size_ratio": {"volume": round(ratios[0], 6), "height": round(ratios[1], 6), "longest": round(ratios[2], 6)},
    }


def scene_graph(
    objects: Iterable[SceneObject],
    camera: Camera,
    *,
    world: Mapping | None = None,
    visibility: Mapping[str, Mapping] | None = None,
    extra: Mapping | None = None,
    relate: Iterable[str] | None = None,
) -> dict:
    """The graph of one view (JSON-ready). ``visibility``: ``{name: {"visible", "unoccluded",
    "bbox"}}`` from the server; objects without an entry get no pixel fields. ``relate``: names
    whose ordered pairs get relations (default: every object; n² grows fast with clutter)."""
    objs = list(objects)
    vis = visibility or {}
    nodes = _object_nodes(objs, camera, vis)
    keep = None if relate is None else set(relate)
    rel_objs = [o for o in objs if keep is None or o.name in keep]
    rels = relations(rel_objs, camera)
    return {
        "schema": SCHEMA,
        "camera": camera_block(camera),
        "world": dict(world or {}),
        **dict(extra or {}),
        "objects": nodes,
        "relations": rels,
    }


# --- JSON -----------------------------------------------------------------------------------------
_NODE_LEVEL = 2  # root dict (0) -> "objects" list (1) -> node dict (2)


def graph_json(graph: Mapping) -> str:
    """``scenarios.output.writers.dumps(graph)``: each node's camera-independent values come as text
    encoded once per object (:class:`Node`)."""
    return dumps(graph)


def graph_rows(graph: Mapping, sample: Mapping) -> list[dict]:
    """One flat table row per object (the scene table), prefixed by the sample's identifiers."""
    rows = []
    for o in graph["objects"]:
        row = dict(sample)
        row.update(
            {
                "object_id": o["id"],
                "name": o["name"],
                "role": o["role"],
                "class": o["class"],
                "asset": o["asset"],
                "distance_to_camera_cm": o["distance_to_camera_cm"],
                "visible_px": o.get("visible_px"),
                "visible_ratio": o.get("visible_ratio"),
                "volume_m3": o["volume_m3"],
            }
        )
        row.update({f"{k}_{ax}": v for k in ("location", "scale") for ax, v in zip("xyz", o[k])})
        row.update({f"rotation_{ax}": v for ax, v in zip(("pitch", "yaw", "roll"), o["rotation"])})
        row.update({f"size_{ax}": v for ax, v in zip("lwh", o["box3d"]["size_cm"])})
        box = o.get("box2d") or [None] * 4
        row.update({f"bbox_{k}": v for k, v in zip(("x0", "y0", "x1", "y1"), box)})
        rows.append(row)
    return rows


def coco_annotations(
    mask_rgb: np.ndarray, graph: Mapping, image_id: int, categories: Mapping[str, int], first_id: int = 1
) -> list[dict]:
    """COCO instance annotations (RLE masks) of the graph's objects from the instance mask:
    an object's pixels are those of its instance colour. Ids run ``first_id, first_id + 1, ...``
    over the objects that have pixels, so consecutive images never reuse an id."""
    anns = []
    m = np.asarray(mask_rgb)[..., :3].astype(np.int32)
    packed = (m[..., 0] << 16) | (m[..., 1] << 8) | m[..., 2]  # one compare per object, not three
    present = set(np.unique(packed).tolist())  # most clutter is off screen
    for o in graph["objects"]:
        r, g, b = (int(v) for v in o["color"][:3])
        key = (r << 16) | (g << 8) | b
        if key not in present:
            continue
        sel = packed == key
        rle = coco_rle.encode(sel)
        anns.append(
            {
                "id": first_id + len(anns),
                "image_id": int(image_id),
                "category_id": int(categories[o["class"]]),
                "segmentation": rle,
                "area": coco_rle.area(rle),
                "bbox": coco_rle.bbox(sel),
                "iscrowd": 0,
                "sceneforge_object": o["name"],
            }
        )
    return anns
