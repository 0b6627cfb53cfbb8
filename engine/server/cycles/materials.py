"""Blender materials for the worker: sceneforge's PBR materials as Principled BSDF node trees.

Runs inside the isolated Blender environment (imported by ``worker.py``, next to it; never by
sceneforge). Albedo as in GL's PBR look (``gl/pbr_shaders.py``): a material slot's albedo is
``base_color`` times its texture when it has one (UVs, alpha cut-out), and never reads the
vertex colours (they are the flat fallback, already the material's colour: multiplying them in
squared it); a mesh without materials uses its vertex colours. Actors get GL's per-object tint
(object properties), the ground a gentle procedural colour variation like GL's; normal and ORM
maps when the source has them, the ORM's roughness and metallic scaling the material's factors.
"""

from __future__ import annotations

import numpy as np

import bpy  # noqa: E402  (only ever imported in the worker's own venv)

MATERIAL_TINT_GAIN = 2.0  # GL's u_tint_gain for a part with a material (gl/pbr.py: 1 / 0.5)


def image(name: str, pixels: np.ndarray, colorspace: str) -> bpy.types.Image:
    h, w = pixels.shape[:2]
    rgba = np.ones((h, w, 4), dtype=np.float32)
    ch = pixels.shape[2] if pixels.ndim == 3 else 1
    px = pixels.reshape(h, w, ch).astype(np.float32) / 255.0
    rgba[..., : min(ch, 3)] = px[..., :3] if ch >= 3 else np.repeat(px, 3, axis=2)
    if ch == 4:
        rgba[..., 3] = px[..., 3]
    img = bpy.data.images.new(name, w, h, alpha=True)
    img.colorspace_settings.name = colorspace
    img.pixels.foreach_set(rgba[::-1].ravel())  # Blender images: row 0 = bottom
    img.pack()
    return img


def material(
    name: str, m: dict | None, a: dict, i: int, ground: bool, ground_noise_scale: float = 0.002, tint_gain: float = 1.0
) -> bpy.types.Material:
    """Principled BSDF for slot ``i``: ``m`` None = the vertex colours (a mesh without materials),
    else ``base_color`` × the slot's albedo texture (``a["albedo<i>"]``, sampled with the mesh's
    UVs) when it has one. Optional per-object tint (object properties, like GL's ``Actor.tint``)
    with GL's gain ``tint_gain`` (:func:`_tint`); normal/ORM maps."""
    mat = bpy.data.materials.new(name)
    nt = mat.node_tree
    bsdf = nt.nodes["Principled BSDF"]
    roughness = float((m or {}).get("roughness", 0.8 if not ground else 0.95))
    metallic = float((m or {}).get("metallic", 0.0))
    bsdf.inputs["Roughness"].default_value = roughness
    bsdf.inputs["Metallic"].default_value = metallic
    albedo_key = f"albedo{i}"
    if m is None:  # no material: the vertex colours are the albedo (GL's VERTEX_COLOR variant)
        attr = nt.nodes.new("ShaderNodeVertexColor")
        attr.layer_name = "sf_color"
        color_out = attr.outputs["Color"]
    else:  # a material: base colour factor × texture; the vertex colours are not read (as in GL)
        base = [float(x) for x in (m.get("base_color") or [1.0, 1.0, 1.0, 1.0])]
        rgb = nt.nodes.new("ShaderNodeRGB")
        rgb.outputs["Color"].default_value = (*base[:3], 1.0)
        color_out = rgb.outputs["Color"]
        if albedo_key in a:
            tex = nt.nodes.new("ShaderNodeTexImage")
            tex.image = image(f"{name}.albedo", a[albedo_key], "sRGB")
            mul = nt.nodes.new("ShaderNodeMix")
            mul.data_type, mul.blend_type = "RGBA", "MULTIPLY"
            mul.inputs["Factor"].default_value = 1.0
            nt.links.new(tex.outputs["Color"], mul.inputs[6])
            nt.links.new(color_out, mul.inputs[7])
            color_out = mul.outputs[2]
            if a[albedo_key].ndim == 3 and a[albedo_key].shape[2] == 4 and m.get("alpha_cutoff") is not None:
                cut = nt.nodes.new("ShaderNodeMath")
                cut.operation = "GREATER_THAN"
                cut.inputs[1].default_value = float(m["alpha_cutoff"])
                nt.links.new(tex.outputs["Alpha"], cut.inputs[0])
                nt.links.new(cut.outputs[0], bsdf.inputs["Alpha"])
    if ground:
        color_out = _ground_noise(nt, color_out, ground_noise_scale)
    else:
        color_out = _tint(nt, color_out, tint_gain)
    nt.links.new(color_out, bsdf.inputs["Base Color"])
    if f"normal{i}" in a:
        ntex = nt.nodes.new("ShaderNodeTexImage")
        ntex.image = image(f"{name}.normal", a[f"normal{i}"], "Non-Color")
        nmap = nt.nodes.new("ShaderNodeNormalMap")
        nt.links.new(ntex.outputs["Color"], nmap.inputs["Color"])
        nt.links.new(nmap.outputs["Normal"], bsdf.inputs["Normal"])
    if f"orm{i}" in a:  # GL: roughness × orm.g, metallic × orm.b
        otex = nt.nodes.new("ShaderNodeTexImage")
        otex.image = image(f"{name}.orm", a[f"orm{i}"], "Non-Color")
        sep = nt.nodes.new("ShaderNodeSeparateColor")
        nt.links.new(otex.outputs["Color"], sep.inputs[0])
        for channel, socket, factor in ((1, "Roughness", roughness), (2, "Metallic", metallic)):
            scale = nt.nodes.new("ShaderNodeMath")
            scale.operation = "MULTIPLY"
            nt.links.new(sep.outputs[channel], scale.inputs[0])
            scale.inputs[1].default_value = factor
            nt.links.new(scale.outputs[0], bsdf.inputs[socket])
    return mat


def _tint(nt, color_out, gain: float):
    """GL's tint (``pbr_shaders.py``): albedo = on ? tint × min(luma(colour) × gain, 1.5) : colour,
    tint and on from object properties; ``gain`` is the mesh's (vertex colours: 1 / its brightest
    colour's linear luminance) or 2 (a material slot), as ``GLBackend`` sets ``u_tint_gain``."""
    tint = nt.nodes.new("ShaderNodeAttribute")
    tint.attribute_type, tint.attribute_name = "OBJECT", "sf_tint"
    on = nt.nodes.new("ShaderNodeAttribute")
    on.attribute_type, on.attribute_name = "OBJECT", "sf_tint_on"
    bw = nt.nodes.new("ShaderNodeRGBToBW")
    nt.links.new(color_out, bw.inputs[0])
    lum = nt.nodes.new("ShaderNodeMath")
    lum.operation = "MULTIPLY"
    nt.links.new(bw.outputs[0], lum.inputs[0])
    lum.inputs[1].default_value = float(gain)
    cap = nt.nodes.new("ShaderNodeMath")
    cap.operation = "MINIMUM"
    nt.links.new(lum.outputs[0], cap.inputs[0])
    cap.inputs[1].default_value = 1.5
    tinted = nt.nodes.new("ShaderNodeMix")
    tinted.data_type, tinted.blend_type = "RGBA", "MULTIPLY"
    tinted.inputs["Factor"].default_value = 1.0
    nt.links.new(tint.outputs["Color"], tinted.inputs[6])
    nt.links.new(cap.outputs[0], tinted.inputs[7])
    pick = nt.nodes.new("ShaderNodeMix")
    pick.data_type = "RGBA"
    nt.links.new(on.outputs["Fac"], pick.inputs["Factor"])
    nt.links.new(color_out, pick.inputs[6])
    nt.links.new(tinted.outputs[2], pick.inputs[7])
    return pick.outputs[2]


def _ground_noise(nt, color_out, scale: float):
    """A gentle procedural variation of the ground colour (GL: a noise texture)."""
    noise = nt.nodes.new("ShaderNodeTexNoise")
    coord = nt.nodes.new("ShaderNodeTexCoord")
    nt.links.new(coord.outputs["Object"], noise.inputs["Vector"])
    noise.inputs["Scale"].default_value = scale
    noise.inputs["Detail"].default_value = 6.0
    rng = nt.nodes.new("ShaderNodeMapRange")
    rng.inputs["To Min"].default_value, rng.inputs["To Max"].default_value = 0.75, 1.15
    nt.links.new(noise.outputs["Fac"], rng.inputs["Value"])
    mul = nt.nodes.new("ShaderNodeMix")
    mul.data_type, mul.blend_type = "RGBA", "MULTIPLY"
    mul.inputs["Factor"].default_value = 1.0
    nt.links.new(color_out, mul.inputs[6])
    nt.links.new(rng.outputs["Result"], mul.inputs[7])
    return mul.outputs[2]
