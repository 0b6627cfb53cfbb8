"""GLSL sources for the embedded moderngl renderer (:mod:`engine.server.gl.backend`).

Kept as Python strings (not ``.glsl`` files) so they ship inside the wheel without package-data
rules. All programs work in **UE world coordinates** (cm, Z up): the only UE→GL conversion is
``Camera.view_matrix()``, uploaded as part of ``u_view_proj``.

Programs:

* ``LIT``     colour (location 0) + instance id (1) [+ world normal (2) with ``WITH_NORMAL``];
              ``SHADOW`` adds the sun shadow-map lookup;
              the ``GROUND`` variant adds the procedural noise texture (kept out of the actor
              variant: on llvmpipe every tiny triangle shades a whole pixel block, so the
              actors' fragment shader must stay cheap);
* ``IDS``     instance id only (location 0): cheap pass for masks, depth and pixel counts;
* ``COVER``   coverage of up to 4 actors at once (one RGBA channel each, MAX blending, no
              depth test): the "unoccluded" pixel counts in one pass (where ``IDS_COVER`` cannot
              be compiled);
* ``IDS_COVER`` the id pass of pixel counts recording each named actor's coverage as a bit
              in an r32ui image (GLSL 4.50 image atomics): counts in one pass;
* ``SKY``     zenith→horizon gradient on the pixels left empty by the geometry (lit only);
* ``SHADOW``  depth-only pass from the sun (see gl/shadow.py).

No face culling anywhere: the view matrix has det −1 and actors may be mirrored, so winding is
meaningless. Normals are therefore turned to face the camera in the fragment shader.
"""

from __future__ import annotations

HEADER = "#version 330 core\n"

SHADOW_COORD = """
// The sun's cascaded shadow map (gl/shadow.py), used by the SHADOW variant: both cascades share
// one projection and one atlas texture, so a fragment picks its cascade by coordinates (one
// lookup, no second sampler); fragments farther than u_shadow_split from the eye read the far one.
uniform mat4 u_light_vp;
uniform vec2 u_shadow_texel;     // world size of one texel of the near and the far cascade, cm
uniform vec2 u_shadow_bias;      // their constant depth bias in map units (2 texels' worth of cm)
uniform float u_shadow_split;    // camera distance (cm) from which the far cascade is read
uniform vec4 u_shadow_uv_near;   // [0, 1]^2 map coordinates -> atlas: (scale xy, offset xy)
uniform vec4 u_shadow_uv_far;
uniform sampler2DShadow u_shadow_map;
uniform vec2 u_shadow_fade;      // camera distances (cm): shadows fade out from x, none beyond y

// (atlas xy, reference depth) of this fragment, ``dist`` cm from the eye; z = 2 off the map (lit).
vec3 shadow_coord(vec3 n, float dist) {
    bool far_c = dist > u_shadow_split;
    vec4 uv = far_c ? u_shadow_uv_far : u_shadow_uv_near;
    vec4 lp = u_light_vp * vec4(v_world + n * (1.5 * (far_c ? u_shadow_texel.y : u_shadow_texel.x)), 1.0);
    vec3 p = lp.xyz / lp.w * 0.5 + 0.5;                     // normal offset (above) against acne
    if (p.x <= 0.0 || p.x >= 1.0 || p.y <= 0.0 || p.y >= 1.0 || p.z >= 1.0) return vec3(0.0, 0.0, 2.0);
    return vec3(p.xy * uv.xy + uv.zw, p.z - (far_c ? u_shadow_bias.y : u_shadow_bias.x));
}
"""

LIT_VS = """
uniform mat4 u_view_proj;
uniform mat4 u_model;
uniform mat3 u_normal_mat;
in vec3 in_pos;
in vec3 in_normal;
in vec3 in_color;
out vec3 v_world;
out vec3 v_normal;
out vec3 v_color;
#ifdef ALPHA_TEST
in vec2 in_uv;
out vec2 v_uv;
#endif
void main() {
    vec4 w = u_model * vec4(in_pos, 1.0);
#ifdef ALPHA_TEST
    v_uv = in_uv;
#endif
    v_world = w.xyz;
    v_normal = u_normal_mat * in_normal;
    v_color = in_color;
    gl_Position = u_view_proj * w;
}
"""

LIT_FS = (
    """
uniform vec3 u_cam_pos;         // camera centre, UE world cm
uniform vec3 u_to_sun;          // unit vector towards the sun
uniform vec3 u_sun_color;       // sun colour * intensity * (1 - ambient)
uniform vec3 u_amb_up;          // ambient light from the zenith side (precomputed on the CPU)
uniform vec3 u_amb_side;        // ambient light from the horizon (normals facing sideways/down)
uniform vec4 u_tint;            // rgb = tint / max luma of the mesh, a = 1 to use it
uniform int u_id;               // 1 + actor index; 0 = ground
uniform vec2 u_noise_scale;     // cm per noise cell (fine, coarse); 0 = no noise (GROUND only)
in vec3 v_world;
"""
    + SHADOW_COORD
    + """in vec3 v_normal;
in vec3 v_color;
layout(location = 0) out vec4 f_color;
layout(location = 1) out int f_id;
#ifdef WITH_NORMAL
layout(location = 2) out vec4 f_normal;
#endif

#ifdef GROUND
uniform sampler2D u_noise;      // tileable value noise in [0, 1], mipmapped (no distant aliasing)
#endif
#ifdef ALPHA_TEST
// Cut-out foliage: the same test as every other pass, so ids/depth agree across looks and passes.
uniform sampler2D u_albedo;
uniform float u_alpha_cutoff;
uniform float u_base_alpha;
in vec2 v_uv;
#endif

vec3 surface_normal(vec3 to_cam) {
#ifdef GROUND
    // Terrain: analytic normals, always pointing up (not turned to the camera: on the far side
    // of a hill, seen at a grazing angle, that would turn them into the ground).
    return normalize(v_normal);
#else
    // Geometric normal from screen-space derivatives, turned towards the camera: independent
    // of winding, mirroring and the handedness flip of the view matrix.
    vec3 ng = normalize(cross(dFdx(v_world), dFdy(v_world)));
    if (dot(ng, to_cam) < 0.0) ng = -ng;
    // Smooth (per-vertex) normal where it agrees with the facet, else the facet normal.
    float len = length(v_normal);
    if (len < 1e-6) return ng;
    vec3 ns = v_normal / len;
    if (dot(ns, ng) < 0.0) ns = -ns;
    return dot(ns, ng) > 0.4 ? ns : ng;
#endif
}

float shadow_lookup(vec3 n, float dist) {
    vec3 c = shadow_coord(n, dist);
    if (c.z > 1.5) return 1.0;          // off the map
#ifdef GROUND
    // PCF: 4 hardware-filtered (bilinear compare) taps half a texel apart = a 3x3-texel tent,
    // for the large soft-edged shadows on the ground.
    vec2 ts = 0.5 / vec2(textureSize(u_shadow_map, 0));
    float vis = texture(u_shadow_map, vec3(c.xy + vec2(-ts.x, -ts.y), c.z))
              + texture(u_shadow_map, vec3(c.xy + vec2(ts.x, -ts.y), c.z))
              + texture(u_shadow_map, vec3(c.xy + vec2(-ts.x, ts.y), c.z))
              + texture(u_shadow_map, vec3(c.xy + vec2(ts.x, ts.y), c.z));
    return 0.25 * vis;
#else
    // Actors: one bilinear compare tap (2x2 PCF). Every tiny triangle shades a whole pixel
    // block on llvmpipe, so taps on actors cost far more than their few pixels suggest.
    return texture(u_shadow_map, c);
#endif
}

float shadow_visibility(vec3 n) {
    // Layers are compile-time variants: llvmpipe pays for a sampling branch even when a
    // uniform disables it, so a program without shadows must not contain the lookups.
    float vis = 1.0;
#ifdef SHADOW
    // Beyond the shadow distance the map holds nothing this view may read (gl/shadow.py).
    float dist = length(v_world - u_cam_pos);
    float fade = clamp((dist - u_shadow_fade.x) / (u_shadow_fade.y - u_shadow_fade.x), 0.0, 1.0);
    if (fade < 1.0)
        vis = mix(shadow_lookup(n, dist), 1.0, fade);
#endif
    return vis;
}

void main() {
#ifdef ALPHA_TEST
    if (texture(u_albedo, v_uv).a * u_base_alpha < u_alpha_cutoff) discard;
#endif
    vec3 to_cam = normalize(u_cam_pos - v_world);
    vec3 n = surface_normal(to_cam);
    vec3 albedo = v_color;
    if (u_tint.a > 0.5) albedo = u_tint.rgb * dot(v_color, vec3(0.299, 0.587, 0.114));
#ifdef GROUND
    if (u_noise_scale.x > 0.0) {
        float fine = texture(u_noise, v_world.xy / (256.0 * u_noise_scale.x)).r;
        float coarse = texture(u_noise, v_world.yx / (256.0 * u_noise_scale.y)).r;
        albedo *= 0.82 + 0.22 * fine + 0.14 * coarse;
    }
#endif
    float ndl = max(dot(n, u_to_sun), 0.0);
    float vis = shadow_visibility(n);
    vec3 light = mix(u_amb_side, u_amb_up, 0.5 + 0.5 * n.z) + u_sun_color * (ndl * vis);
    f_color = vec4(clamp(albedo * light, 0.0, 1.0), 1.0);
    f_id = u_id;
#ifdef WITH_NORMAL
    f_normal = vec4(n, 0.0);
#endif
}
"""
)

IDS_VS = """
uniform mat4 u_view_proj;
uniform mat4 u_model;
in vec3 in_pos;
void main() {
    gl_Position = u_view_proj * (u_model * vec4(in_pos, 1.0));
}
"""

IDS_FS = """
uniform int u_id;
layout(location = 0) out int f_id;
void main() {
    f_id = u_id;
}
"""

COVER_FS = """
uniform vec4 u_channel;         // one-hot: which of 4 actors this draw belongs to
layout(location = 0) out vec4 f_cover;
void main() {
    f_cover = u_channel;        // combined with MAX blending, no depth test
}
"""

# The id pass of pixel counts also records each named actor's coverage (every pixel its
# fragments reach, whatever the depth test then decides): an atomic OR of the actor's bit into an
# r32ui image. A fragment shader that writes memory runs before the depth test (no early
# fragment tests), so the bit is set even where another actor or the ground is in front; the id
# written is still decided by the depth test. Replaces a second pass drawing the named actors
# alone (``COVER``). GLSL 4.50 (image load/store); the vertex shader is ``IDS_VS`` unchanged, so
# the fragments are exactly those of the id and coverage passes.
IDS_COVER_FS = """#version 450 core
layout(r32ui, binding = 0) uniform coherent uimage2D u_cover;
uniform int u_id;
uniform uint u_bit;
layout(location = 0) out int f_id;
void main() {
    imageAtomicOr(u_cover, ivec2(gl_FragCoord.xy), u_bit);
    f_id = u_id;
}
"""

SKY_VS = """
out vec2 v_ndc;
void main() {
    // One triangle covering the screen at depth 1 (the far plane), drawn after the geometry
    // with depth test <= and no depth writes: only pixels nothing else covered are shaded.
    vec2 p = vec2(float((gl_VertexID & 1) * 4 - 1), float((gl_VertexID & 2) * 2 - 1));
    v_ndc = p;
    gl_Position = vec4(p, 1.0, 1.0);
}
"""

SKY_FS = """
uniform mat3 u_eye_to_world;    // rotation from GL eye space to UE world axes
uniform vec2 u_inv_focal;       // (1 / P[0][0], 1 / P[1][1])
uniform vec3 u_sky_zenith;
uniform vec3 u_sky_horizon;
in vec2 v_ndc;
layout(location = 0) out vec4 f_color;
layout(location = 1) out int f_id;
#ifdef WITH_NORMAL
layout(location = 2) out vec4 f_normal;
#endif
void main() {
    vec3 d = normalize(u_eye_to_world * vec3(v_ndc * u_inv_focal, -1.0));
    float t = sqrt(clamp(d.z, 0.0, 1.0));
    f_color = vec4(mix(u_sky_horizon, u_sky_zenith, t), 1.0);
    f_id = 0;
#ifdef WITH_NORMAL
    f_normal = vec4(0.0);
#endif
}
"""

SHADOW_VS = """
uniform mat4 u_light_vp;
uniform mat4 u_model;
in vec3 in_pos;
void main() {
    gl_Position = u_light_vp * (u_model * vec4(in_pos, 1.0));
}
"""

SHADOW_FS = """
void main() {}
"""


def source(body: str, defines: tuple[str, ...] = ()) -> str:
    """Prefix a shader body with the GLSL version line and ``#define``s (program variants); a
    body that starts with its own ``#version`` line keeps it."""
    if body.startswith("#version"):
        head, rest = body.split("\n", 1)
        return head + "\n" + "".join(f"#define {d}\n" for d in defines) + rest
    return HEADER + "".join(f"#define {d}\n" for d in defines) + body
