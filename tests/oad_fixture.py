"""A tiny, real-format stand-in for Debian's ``0ad-data`` (issue 49 tests never download).

Writers for the binary formats the character pack reads, so tests build a genuine .deb (ar:
debian-binary, control.tar.xz, data.tar.xz) holding a copyright file and a STORED public.zip
with a skinned mesh (PMD v4), a clip (PSA), an actor, a skin (uncompressed RGBA DDS) and some
files the pack must leave out. The mesh is a 2-bone "leg": a square prism 0.2 x 0.2 units from
y = 0 to y = 2 (Y up, as the game's data), rings at y = 0, 1, 2; ring 0 on bone 0, ring 1 half
and half, ring 2 on bone 1. Bone 0 sits at the origin, bone 1 at (0, 1, 0) (the "knee"). The
clip has 4 frames: bone 0 still, bone 1 bent about Z by 0, 30, 90, 30 degrees.
"""

from __future__ import annotations

import io
import math
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np

COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: 0ad-data

Files: *
Copyright: 2003-2022 Wildfire Games
License: CC-BY-SA-3.0

Files: debian/*
Copyright: 2010 Somebody
License: GPL-2+
"""
MESH = "art/meshes/skeletal/test_leg.dae.cached.pmd"
CLIP = "art/animation/biped/test_walk.dae.cached.psa"
RUN_CLIP = "art/animation/biped/test_run.dae.cached.psa"  # a stepping clip whose foot travels (stepping_clip)
SKIN = "art/textures/skins/skeletal/test_skin.png.cached.dds"
ACTOR = "art/actors/units/test/leg.xml"
SPECIES_ACTOR = "art/actors/fauna/chicken.xml"  # the same actor where the "chicken" class looks for one
HUMAN_ACTOR = "art/actors/units/athenians/female_citizen.xml"  # ... and where "human" looks (1.70 m: a tall stick)
LEFT_OUT = ("art/meshes/structural/house.dae.cached.pmd", "art/actors/units/test/leg.xmb", "art/textures/ui/x.png")
BEND_DEG = (0.0, 30.0, 90.0, 30.0)


def quat_z(deg: float) -> tuple[float, float, float, float]:
    h = math.radians(deg) / 2.0
    return (0.0, 0.0, math.sin(h), math.cos(h))


def leg_mesh() -> dict:
    """Vertices (bind pose), bones, weights and faces of the 2-bone prism."""
    pos, bones, weights = [], [], []
    for ring, y in enumerate((0.0, 1.0, 2.0)):
        for x, z in ((-0.1, -0.1), (0.1, -0.1), (0.1, 0.1), (-0.1, 0.1)):
            pos.append((x, y, z))
            if ring == 0:
                bones.append((0, 255, 255, 255)), weights.append((1.0, 0.0, 0.0, 0.0))
            elif ring == 1:
                bones.append((0, 1, 255, 255)), weights.append((0.5, 0.5, 0.0, 0.0))
            else:
                bones.append((1, 255, 255, 255)), weights.append((1.0, 0.0, 0.0, 0.0))
    faces = []
    for ring in range(2):
        for i in range(4):
            a, b = ring * 4 + i, ring * 4 + (i + 1) % 4
            faces += [(a, b, b + 4), (a, b + 4, a + 4)]
    faces += [(0, 2, 1), (0, 3, 2), (8, 9, 10), (8, 10, 11)]
    return {"pos": np.array(pos), "bones": bones, "weights": weights, "faces": faces}


def pmd_bytes(mesh: dict | None = None, props=()) -> bytes:
    """PMD v4 of ``mesh`` (default :func:`leg_mesh`) with the 2-bone bind pose."""
    m = mesh or leg_mesh()
    body = io.BytesIO()
    body.write(struct.pack("<II", len(m["pos"]), 1))
    for p, b, w in zip(m["pos"], m["bones"], m["weights"]):
        n = np.array([p[0], 0.0, p[2]]) / max(math.hypot(p[0], p[2]), 1e-9)
        body.write(struct.pack("<3f3f2f4B4f", *p, *n, (p[0] + 0.1) * 5, p[1] / 2, *b, *w))
    body.write(struct.pack("<I", len(m["faces"])))
    for f in m["faces"]:
        body.write(struct.pack("<3H", *f))
    bind = [((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)), ((0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0))]
    body.write(struct.pack("<I", len(bind)))
    for t, q in bind:
        body.write(struct.pack("<7f", *t, *q))
    body.write(struct.pack("<I", len(props)))
    for name, t, q, bone in props:
        body.write(struct.pack("<I", len(name)) + name.encode() + struct.pack("<7fB", *t, *q, bone))
    data = body.getvalue()
    return b"PSMD" + struct.pack("<II", 4, len(data)) + data


def psa_bytes(bend=BEND_DEG, name: str = "test_walk") -> bytes:
    """PSA v1: bone 0 at the origin, bone 1 at the knee rotated about Z by ``bend`` per frame."""
    body = io.BytesIO()
    body.write(struct.pack("<I", len(name)) + name.encode())
    body.write(struct.pack("<fII", 1000.0 / 30.0, 2, len(bend)))
    for deg in bend:
        body.write(struct.pack("<7f", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0))
        body.write(struct.pack("<7f", 0.0, 1.0, 0.0, *quat_z(deg)))
    data = body.getvalue()
    return b"PSSA" + struct.pack("<II", 1, len(data)) + data


STEP_FRAMES, STANCE, TRAVEL, LIFT = 40, 0.6, 1.0, 0.3  # frames, duty, foot travel per stance, swing lift (units)


def stepping_clip(jitter: float = 0.0) -> bytes:
    """An in-place step: both bones translated backwards (data +Z) on the ground for ``STANCE``
    of the cycle, then up and forwards. ``jitter`` adds a forward wobble (units) in the stance."""
    body = io.BytesIO()
    body.write(struct.pack("<I", 4) + b"step")
    body.write(struct.pack("<fII", 1000.0 / 30.0, 2, STEP_FRAMES))
    for f in range(STEP_FRAMES):
        p = f / STEP_FRAMES
        if p < STANCE:
            z, y = -TRAVEL / 2 + TRAVEL * p / STANCE + jitter * math.sin(2 * math.pi * p / STANCE), 0.0
        else:
            s = (p - STANCE) / (1 - STANCE)
            z, y = TRAVEL / 2 - TRAVEL * s, LIFT * math.sin(math.pi * s)
        body.write(struct.pack("<7f", 0.0, y, z, 0.0, 0.0, 0.0, 1.0))
        body.write(struct.pack("<7f", 0.0, 1.0 + y, z, 0.0, 0.0, 0.0, 1.0))
    data = body.getvalue()
    return b"PSSA" + struct.pack("<II", 1, len(data)) + data


def dds_bytes(w: int = 4, h: int = 4, rgba=(200, 120, 60, 255)) -> bytes:
    """An uncompressed 32-bit BGRA DDS (Pillow reads it like the game's DXT skins)."""
    pf = struct.pack("<II4sIIIII", 32, 0x41, b"\0\0\0\0", 32, 0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000)
    header = struct.pack("<IIIIIII", 124, 0x100F, h, w, w * 4, 0, 0) + b"\0" * 44 + pf + struct.pack("<IIIII", 0x1000, 0, 0, 0, 0)
    px = bytes((rgba[2], rgba[1], rgba[0], rgba[3])) * (w * h)
    return b"DDS " + header + px


ACTOR_XML = """<?xml version="1.0" encoding="utf-8"?>
<actor version="1">
  <castshadow/>
  <group>
    <variant frequency="1" name="Base">
      <animations>
        <animation file="biped/test_walk.dae" name="Walk" speed="1"/>
        <animation file="biped/test_run.dae" name="Run" speed="1"/>
      </animations>
      <mesh>skeletal/test_leg.dae</mesh>
      <textures><texture file="skeletal/test_skin.png" name="baseTex"/></textures>
    </variant>
  </group>
  <material>player_trans.xml</material>
</actor>
"""


def public_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(LEFT_OUT[0], pmd_bytes())
        z.writestr(MESH, pmd_bytes())
        z.writestr(CLIP, psa_bytes())
        z.writestr(RUN_CLIP, stepping_clip())
        z.writestr(SKIN, dds_bytes())
        z.writestr(ACTOR, ACTOR_XML)
        z.writestr(SPECIES_ACTOR, ACTOR_XML)
        z.writestr(HUMAN_ACTOR, ACTOR_XML)
        z.writestr(LEFT_OUT[1], b"XMB0")
        z.writestr(LEFT_OUT[2], b"png")
        z.writestr("art/LICENSE.txt", "CC-BY-SA 3.0 Wildfire Games\n")
    return buf.getvalue()


def _tar_xz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo("./" + name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def _ar(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, data in members:
        out.write(f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode())
        out.write(data + (b"\n" if len(data) % 2 else b""))
    return out.getvalue()


def install_pack(cache: Path, tmp: Path) -> Path:
    """Install the fixture pack into ``cache`` (as ``sceneforge assets install characters
    --from``); returns the pack root."""
    from sceneforge.assets_manifest.characters import pack

    pack.install(cache, source=write_deb(tmp))
    return pack.pack_root(cache)


def write_deb(path: Path, version: str = "0.0.26-1") -> Path:
    """A genuine .deb named like Debian's (``0ad-data_<version>_all.deb``) in folder ``path``."""
    data = _tar_xz(
        {
            "usr/share/doc/0ad-data/copyright": COPYRIGHT.encode(),
            "usr/share/games/0ad/mods/mod/mod.zip": b"PK\x05\x06" + b"\0" * 18,
            "usr/share/games/0ad/mods/public/public.zip": public_zip(),
        }
    )
    control = _tar_xz({"control": f"Package: 0ad-data\nVersion: {version}\n".encode()})
    deb = Path(path) / f"0ad-data_{version}_all.deb"
    deb.write_bytes(_ar([("debian-binary", b"2.0\n"), ("control.tar.xz", control), ("data.tar.xz", data)]))
    return deb
