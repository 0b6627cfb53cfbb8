"""0 A.D. actor files: which mesh, skins, clips and props make one character.

An actor (``art/actors/<path>.xml``) is a list of ``<group>``s; the game draws one ``<variant>``
per group (by ``frequency``) and a variant may pull its body from ``art/variants/<file>``. The
meshes, clips and skins it names exist in the package only in their converted form:

    mesh  skeletal/x.dae     -> art/meshes/skeletal/x.dae.cached.pmd
    clip  biped/walk.dae     -> art/animation/biped/walk.dae.cached.psa
    skin  skeletal/t.png     -> art/textures/skins/skeletal/t.png.cached.dds

:func:`resolve` picks, per group, the variant named in ``prefer`` (e.g. the walking ``Base``
and the ``Idle`` stance rather than a death or gather variant), else one drawn by frequency with
``rng``, else the first. Names of clips are case-folded (``Walk`` / ``walk``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sceneforge.core.errors import AssetError

MAX_VARIANT_DEPTH = 4


@dataclass
class ActorSpec:
    """What one resolved actor names (paths as in the XML, before the cached-file mapping)."""

    path: str
    mesh: str | None = None
    textures: dict = field(default_factory=dict)  # role (baseTex, ...) -> file
    clips: dict = field(default_factory=dict)  # lower-case name -> [(file, speed)]
    props: dict = field(default_factory=dict)  # attach point -> actor path ('' removes it)
    color: tuple[float, float, float] | None = None
    material: str = ""


def mesh_file(p: str) -> str:
    return f"art/meshes/{p}.cached.pmd"


def clip_file(p: str) -> str:
    return f"art/animation/{p}.cached.psa"


def skin_file(p: str) -> str:
    return f"art/textures/skins/{p}.cached.dds"


def actor_file(p: str) -> str:
    return f"art/actors/{p}"


def read(root: Path, rel: str) -> bytes:
    """A file of the installed pack (``root`` = ``<cache>/characters``), refusing ``..``."""
    if ".." in rel.split("/") or rel.startswith("/"):
        raise AssetError(f"character pack: bad path {rel!r}")
    try:
        return (Path(root) / rel).read_bytes()
    except OSError as e:
        raise AssetError(f"character pack: {rel}: {e.strerror or e}") from None


def _xml(root: Path, rel: str) -> ET.Element:
    try:
        return ET.fromstring(read(root, rel))
    except ET.ParseError as e:
        raise AssetError(f"character pack: {rel}: {e}") from None


def _apply(root: Path, v: ET.Element, spec: ActorSpec, depth: int = 0) -> None:
    f = v.get("file")
    if f and depth < MAX_VARIANT_DEPTH:
        _apply(root, _xml(root, f"art/variants/{f}"), spec, depth + 1)
    for c in v:
        if c.tag == "mesh" and c.text:
            spec.mesh = c.text.strip()
        elif c.tag == "textures":
            for t in c:
                if t.get("name") and t.get("file"):
                    spec.textures[t.get("name")] = t.get("file")
        elif c.tag == "animations":
            for a in c:
                if a.get("name") and a.get("file"):
                    spec.clips.setdefault(a.get("name").lower(), []).append((a.get("file"), float(a.get("speed") or 100)))
        elif c.tag == "props":
            for p in c:
                if p.get("attachpoint") is not None:
                    spec.props[p.get("attachpoint")] = p.get("actor") or ""
        elif c.tag == "color" and c.text:
            spec.color = tuple(int(x) / 255.0 for x in c.text.split()[:3])


def resolve(root: Path, actor: str, prefer=("Base", "Idle", "base", "idle"), rng: np.random.Generator | None = None) -> ActorSpec:
    """The actor at ``art/actors/<actor>`` resolved to one variant per group."""
    doc = _xml(root, actor_file(actor))
    spec = ActorSpec(actor)
    for g in doc.findall("group"):
        vs = g.findall("variant")
        if not vs:
            continue
        pick = next((v for v in vs if v.get("name") in prefer), None)
        if pick is None and rng is not None:
            w = np.array([float(v.get("frequency") or 0) for v in vs])
            pick = vs[int(rng.choice(len(vs), p=w / w.sum()))] if w.sum() > 0 else vs[0]
        _apply(root, pick if pick is not None else vs[0], spec)
    m = doc.find("material")
    spec.material = m.text.strip() if m is not None and m.text else ""
    return spec
