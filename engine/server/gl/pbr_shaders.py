"""GLSL of the PBR look (``Look.style == "pbr"``): see docs/renderer.md, "PBR look".

One program family writes tone-mapped sRGB colour + instance id [+ normal] in one pass, exactly
like the flat look (same vertex transform, same draw order, so depth and ids are bit-identical);
FXAA is a separate full-screen pass that reads that colour and writes another texture, so it can
never touch ids or depth.

Variants (``#define``s, compiled on demand; on llvmpipe an unused branch still costs, so features
are compile-time): ``GROUND`` (terrain: surface textures with two-scale anti-tiling and macro
variation, 4-tap PCF), ``VERTEX_COLOR`` (a part without material: vertex colours), ``ALBEDO_MAP``, ``NORMAL_MAP``,
``ORM_MAP``, ``ALPHA_TEST``, ``SHADOW``,
``WITH_NORMAL``, ``FOG``, ``OBJECT_NORMALS`` (the normal map is in the mesh's frame: impostor cards).

Units: linear radiance, the sun lights a white surface facing it to 1 × ``Sun.intensity``; the
sky's image-based light is normalised (see envlight.py) and scaled by ``u_sky_scale``.
"""

from __future__ import annotations

from sceneforge.engine.server.gl.shaders import SHADOW_COORD

PBR_VS = """
// Varyings are the main per-triangle cost on llvmpipe (every one is set up for every triangle,
// however small): only what the variant reads is passed, and the material colour, constant over
// a face, is a flat varying.
#if !defined(GROUND) && (defined(ALBEDO_MAP) || defined(NORMAL_MAP) || defined(ORM_MAP) || defined(ALPHA_TEST))
#define HAS_UV
#endif
uniform mat4 u_view_proj;
uniform mat4 u_model;
uniform mat3 u_normal_mat;
in vec3 in_pos;
in vec3 in_normal;
out vec3 v_world;
out vec3 v_normal;
#ifndef GROUND
#ifdef VERTEX_COLOR
in vec3 in_color;                // no material: the vertex colours are the albedo (sRGB)
out vec3 v_albedo;
#else
in vec4 in_base;                 // material base colour factor (sRGB rgb) per vertex, equal on a face's corners
flat out vec3 v_albedo;
#endif
#endif
#ifdef HAS_UV
in vec2 in_uv;
out vec2 v_uv;
#endif
void main() {
    vec4 w = u_model * vec4(in_pos, 1.0);
    v_world = w.xyz;
    v_normal = u_normal_mat * in_normal;
#ifndef GROUND
#ifdef VERTEX_COLOR
    v_albedo = in_color;
#else
    v_albedo = in_base.rgb;
#endif
#endif
#ifdef HAS_UV
    v_uv = in_uv;
#endif
    gl_Position = u_view_proj * w;
}
"""

COMMON = """
const float PI = 3.14159265;
uniform vec3 u_cam_pos;
uniform vec3 u_to_sun;
uniform vec3 u_sun_radiance;     // linear sun colour * intensity
uniform vec3 u_sh[9];            // irradiance / pi, already scaled by the sky level (+ ground bounce)
uniform sampler3D u_spec;        // prefiltered radiance, z = roughness
uniform float u_sky_scale;       // multiplies u_spec
uniform vec2 u_env_rot;          // (cos, sin) of the HDRI rotation
uniform vec3 u_bounce;           // radiance below the horizon for reflections (procedural sky)
uniform float u_bounce_mix;      // 1: replace the env below the horizon by u_bounce; 0: HDRI's own
uniform float u_exposure;        // linear multiplier before tone mapping
uniform float u_fog_density;     // extinction per cm at z = 0
uniform float u_fog_falloff;     // 1 / scale height, per cm
uniform vec3 u_fog_color;        // linear radiance of the fog

vec3 env_dir(vec3 d) {           // world direction -> environment direction (HDRI rotation)
    return vec3(u_env_rot.x * d.x + u_env_rot.y * d.y, -u_env_rot.y * d.x + u_env_rot.x * d.y, d.z);
}
// Polynomial atan2 / acos (max error ~1e-4 rad, far below a texel of the 64-wide maps):
// llvmpipe evaluates the built-in transcendental functions in software, per pixel.
float fast_atan2(float y, float x) {
    float ax = abs(x), ay = abs(y);
    float a = min(ax, ay) / max(max(ax, ay), 1e-12);
    float s = a * a;
    float r = ((-0.0464964749 * s + 0.15931422) * s - 0.327622764) * s * a + a;
    if (ay > ax) r = 1.57079637 - r;
    if (x < 0.0) r = 3.14159274 - r;
    return y < 0.0 ? -r : r;
}
float fast_acos(float x) {
    float ax = abs(x);
    float r = (((-0.0187293 * ax + 0.0742610) * ax - 0.2121144) * ax + 1.5707288) * sqrt(max(1.0 - ax, 0.0));
    return x < 0.0 ? PI - r : r;
}
vec2 equirect(vec3 d) {
    return vec2(fast_atan2(d.y, d.x) / (2.0 * PI) + 0.5, fast_acos(clamp(d.z, -1.0, 1.0)) / PI);
}
vec3 sh_eval(vec3 n) {
    return max(u_sh[0] * 0.282095
        + 0.488603 * (u_sh[1] * n.y + u_sh[2] * n.z + u_sh[3] * n.x)
        + 1.092548 * (u_sh[4] * n.x * n.y + u_sh[5] * n.y * n.z + u_sh[7] * n.x * n.z)
        + 0.315392 * u_sh[6] * (3.0 * n.z * n.z - 1.0)
        + 0.546274 * u_sh[8] * (n.x * n.x - n.y * n.y), vec3(0.0));
}
vec3 env_specular(vec3 r, float rough) {
    vec3 e = texture(u_spec, vec3(equirect(env_dir(r)), rough)).rgb * u_sky_scale;
    return mix(e, u_bounce, u_bounce_mix * (1.0 - smoothstep(-0.12, 0.02, r.z)));
}
vec3 aces(vec3 x) {              // Narkowicz's ACES filmic fit
    return clamp((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), 0.0, 1.0);
}
vec3 to_display(vec3 radiance) {
    // linear -> sRGB with three square roots instead of pow (exp/log in software on llvmpipe).
    vec3 x = aces(radiance * u_exposure);
    vec3 s1 = sqrt(x), s2 = sqrt(s1), s3 = sqrt(s2);
    return clamp(0.585122381 * s1 + 0.783140355 * s2 - 0.368262736 * s3, 0.0, 1.0);
}
float fog_amount(vec3 p) {       // exponential height fog integrated along the view ray
    vec3 d = p - u_cam_pos;
    float dist = length(d);
    float k = u_fog_falloff;
    float kdz = k * d.z;
    float integ = abs(kdz) > 1e-4 ? (exp(-k * u_cam_pos.z) - exp(-k * p.z)) / kdz : exp(-k * u_cam_pos.z);
    return 1.0 - exp(-u_fog_density * dist * max(integ, 0.0));
}
vec3 fog_color(vec3 view_dir) {  // + sun in-scattering towards the sun
    float s = max(dot(view_dir, u_to_sun), 0.0);
    float s2 = s * s, s4 = s2 * s2;              // s^8 by squaring: pow is exp/log in software
    return u_fog_color + u_sun_radiance * 0.25 * (s4 * s4);
}
"""

PBR_FS = (
    """
uniform vec4 u_tint;             // rgb = tint (sRGB), a = 1 to use it
uniform float u_tint_gain;       // 1 / the mesh's brightest albedo luminance (linear)
uniform int u_id;
uniform vec4 u_base_color;       // linear factor
uniform float u_roughness;
uniform float u_metallic;
uniform float u_alpha_cutoff;
uniform sampler2D u_albedo;
uniform sampler2D u_normal_map;
uniform sampler2D u_orm;
#ifdef OBJECT_NORMALS
uniform mat3 u_normal_mat;       // object-space normal maps (impostor cards)
#endif
#ifdef GROUND
uniform sampler2D u_noise;       // tileable value noise, mipmapped (macro variation)
uniform float u_tile;            // cm per texture repeat
uniform float u_macro;           // 1: macro variation on; 0: uniform ground ("flat", mirror-symmetric)
#endif
#if !defined(GROUND) && (defined(ALBEDO_MAP) || defined(NORMAL_MAP) || defined(ORM_MAP) || defined(ALPHA_TEST))
#define HAS_UV
#endif
in vec3 v_world;
"""
    + SHADOW_COORD
    + """in vec3 v_normal;
#ifndef GROUND
#ifdef VERTEX_COLOR
in vec3 v_albedo;
#else
flat in vec3 v_albedo;
#endif
#endif
#ifdef HAS_UV
in vec2 v_uv;
#endif
layout(location = 0) out vec4 f_color;
layout(location = 1) out int f_id;
#ifdef WITH_NORMAL
layout(location = 2) out vec4 f_normal;
#endif

vec3 srgb_to_linear(vec3 c) { return c * (c * (c * 0.305306011 + 0.682171111) + 0.012522878); }

float shadow_tap(vec3 n, float dist) {
#ifdef SHADOW
    vec3 c = shadow_coord(n, dist);
    if (c.z > 1.5) return 1.0;          // off the map
#ifdef GROUND
    vec2 ts = 0.75 / vec2(textureSize(u_shadow_map, 0));
    return 0.25 * (texture(u_shadow_map, vec3(c.xy + vec2(-ts.x, -ts.y), c.z))
                 + texture(u_shadow_map, vec3(c.xy + vec2(ts.x, -ts.y), c.z))
                 + texture(u_shadow_map, vec3(c.xy + vec2(-ts.x, ts.y), c.z))
                 + texture(u_shadow_map, vec3(c.xy + vec2(ts.x, ts.y), c.z)));
#else
    return texture(u_shadow_map, c);
#endif
#else
    return 1.0;
#endif
}

float shadow_visibility(vec3 n) {
#ifdef SHADOW
    // Beyond the shadow distance the map holds nothing this view may read (gl/shadow.py).
    float dist = length(v_world - u_cam_pos);
    float fade = clamp((dist - u_shadow_fade.x) / (u_shadow_fade.y - u_shadow_fade.x), 0.0, 1.0);
    if (fade >= 1.0) return 1.0;
    return mix(shadow_tap(n, dist), 1.0, fade);
#else
    return 1.0;
#endif
}

// Tangent frame from screen-space derivatives (no tangents needed in the mesh).
mat3 cotangent_frame(vec3 n, vec3 p, vec2 uv) {
    vec3 dp1 = dFdx(p), dp2 = dFdy(p);
    vec2 duv1 = dFdx(uv), duv2 = dFdy(uv);
    vec3 dp2perp = cross(dp2, n), dp1perp = cross(n, dp1);
    vec3 t = dp2perp * duv1.x + dp1perp * duv2.x;
    vec3 b = dp2perp * duv1.y + dp1perp * duv2.y;
    float invmax = inversesqrt(max(max(dot(t, t), dot(b, b)), 1e-20));
    return mat3(t * invmax, b * invmax, n);
}

void main() {
    vec3 to_cam = normalize(u_cam_pos - v_world);
    vec4 base = u_base_color;
    float rough = u_roughness, metal = u_metallic, ao = 1.0;
#ifdef GROUND
    vec3 n = normalize(v_normal);
    vec3 n_label = n;             // the `normal` output: geometry, never the normal map
    // Two scales of the surface texture, blended by low-frequency noise, plus macro tone
    // variation: no visible repeat from 1 to 15 m above the ground.
    vec2 uv1 = v_world.xy / u_tile;
    vec2 uv2 = mat2(0.8, 0.6, -0.6, 0.8) * v_world.xy / (u_tile * 3.7) + vec2(0.37, 0.71);
    float w = u_macro * smoothstep(0.3, 0.7, texture(u_noise, v_world.yx / 2400.0).r);
    float macro = texture(u_noise, v_world.xy / 9000.0 + vec2(0.5, 0.1)).r;
    vec3 a1 = texture(u_albedo, uv1).rgb, a2 = texture(u_albedo, uv2).rgb;
    base.rgb *= mix(a1, a2, w) * (1.0 + u_macro * (0.5 * macro - 0.25));
#ifdef NORMAL_MAP
    vec3 tn = mix(texture(u_normal_map, uv1).xyz, texture(u_normal_map, uv2).xyz, w) * 2.0 - 1.0;
    n = normalize(mat3(vec3(1, 0, 0), vec3(0, 1, 0), n) * tn);  // u = world x, v = world y
#endif
#ifdef ORM_MAP
    vec3 orm = texture(u_orm, uv1).rgb;
    ao = orm.r; rough *= orm.g; metal *= orm.b;
#endif
#else
    vec3 ng = normalize(cross(dFdx(v_world), dFdy(v_world)));
    if (dot(ng, to_cam) < 0.0) ng = -ng;
    vec3 n = ng;
    float len = length(v_normal);
    if (len > 1e-6) {
        vec3 ns = v_normal / len;
        if (dot(ns, ng) < 0.0) ns = -ns;
        n = dot(ns, ng) > 0.4 ? ns : ng;
    }
    vec3 n_label = n;
    base.rgb *= srgb_to_linear(v_albedo);
#ifdef ALBEDO_MAP
    vec4 tex = texture(u_albedo, v_uv);
    base *= tex;
#endif
    // A tint keeps the albedo's brightness pattern and replaces its hue (as in the flat look).
    if (u_tint.a > 0.5)
        base.rgb = srgb_to_linear(u_tint.rgb) * min(dot(base.rgb, vec3(0.2126, 0.7152, 0.0722)) * u_tint_gain, 1.5);
#ifdef ALPHA_TEST
    if (base.a < u_alpha_cutoff) discard;
#endif
#ifdef NORMAL_MAP
    vec3 tn = texture(u_normal_map, v_uv).xyz * 2.0 - 1.0;
#ifdef OBJECT_NORMALS
    // impostor cards (gl/impostor.py): mesh-frame normals baked from the side the vertex normal
    // points to; from the other side the card shows the mirror image, so are its normals
    vec3 nb = normalize(u_normal_mat * tn);
    vec3 side = len > 1e-6 ? v_normal / len : ng;
    if (dot(side, to_cam) < 0.0) nb -= 2.0 * dot(nb, side) * side;
    n = normalize(nb);
#else
    n = normalize(cotangent_frame(n, v_world, v_uv) * tn);
#endif
#endif
#ifdef ORM_MAP
    vec3 orm = texture(u_orm, v_uv).rgb;
    ao = orm.r; rough *= orm.g; metal *= orm.b;
#endif
#endif
    rough = clamp(rough, 0.045, 1.0);
    vec3 albedo = base.rgb;
    vec3 f0 = mix(vec3(0.04), albedo, metal);
    vec3 diffuse = albedo * (1.0 - metal);
    float ndv = max(dot(n, to_cam), 1e-4);

    // Sun: GGX, height-correlated Smith visibility, Schlick Fresnel.
    vec3 l = u_to_sun;
    float ndl = max(dot(n, l), 0.0);
    vec3 color = vec3(0.0);
    if (ndl > 0.0) {
        vec3 h = normalize(l + to_cam);
        float ndh = max(dot(n, h), 0.0), vdh = max(dot(to_cam, h), 0.0);
        float a = rough * rough, a2 = a * a;
        float dd = ndh * ndh * (a2 - 1.0) + 1.0;
        float D = a2 / (PI * dd * dd);
        float vis = 0.5 / (ndl * sqrt(ndv * ndv * (1.0 - a2) + a2) + ndv * sqrt(ndl * ndl * (1.0 - a2) + a2));
        float fc = 1.0 - vdh, fc2 = fc * fc;
        vec3 F = f0 + (1.0 - f0) * (fc2 * fc2 * fc);
        color = (diffuse * (1.0 - F) + PI * D * vis * F) * u_sun_radiance * (ndl * shadow_visibility(n));
    }
    // Sky: SH irradiance + prefiltered specular with an analytic split-sum (Karis' mobile fit).
    vec4 c0 = vec4(-1.0, -0.0275, -0.572, 0.022), c1 = vec4(1.0, 0.0425, 1.04, -0.04);
    vec4 rr = rough * c0 + c1;
    float a004 = min(rr.x * rr.x, exp2(-9.28 * ndv)) * rr.x + rr.y;
    vec2 ab = vec2(-1.04, 1.04) * a004 + rr.zw;
    vec3 spec = env_specular(reflect(-to_cam, n), rough) * (f0 * ab.x + ab.y);
    color += (diffuse * sh_eval(n) + spec) * ao;
#ifdef FOG
    color = mix(color, fog_color(-to_cam), fog_amount(v_world));
#endif
    f_color = vec4(to_display(color), 1.0);
    f_id = u_id;
#ifdef WITH_NORMAL
    f_normal = vec4(n_label, 0.0);
#endif
}
"""
)

SKY_FS = """
uniform mat3 u_eye_to_world;
uniform vec2 u_inv_focal;
uniform sampler2D u_background;  // HDRI (linear, normalised); unused for the procedural sky
uniform float u_hdri;            // 1: HDRI background, 0: procedural gradient
uniform vec3 u_zenith;           // linear, already scaled
uniform vec3 u_horizon;
uniform float u_sun_cos;         // cos(angular radius of the sun disk)
uniform float u_glow;            // strength of the glow around the sun (turbidity)
uniform float u_bg_gain;         // visible sky vs its light (as SKY_BRIGHTNESS for the gradient)
in vec2 v_ndc;
layout(location = 0) out vec4 f_color;
layout(location = 1) out int f_id;
#ifdef WITH_NORMAL
layout(location = 2) out vec4 f_normal;
#endif
void main() {
    vec3 d = normalize(u_eye_to_world * vec3(v_ndc * u_inv_focal, -1.0));
    vec3 sky;
    float mu = dot(d, u_to_sun);
    if (u_hdri > 0.5) {
        sky = textureLod(u_background, equirect(env_dir(d)), 0.0).rgb * u_sky_scale * u_bg_gain;
        sky = mix(sky, u_bounce, u_bounce_mix * (1.0 - smoothstep(-0.12, 0.02, d.z)));
    } else {
        float t = sqrt(clamp(d.z, 0.0, 1.0));
        sky = mix(u_horizon, u_zenith, t);
        float m1 = max(mu, 0.0), m2 = m1 * m1, m4 = m2 * m2, m8 = m4 * m4, m16 = m8 * m8, m32 = m16 * m16;
        sky += u_sun_radiance * u_glow * (0.02 * (m32 * m32) + 0.015 * (m2 * m4));  // mu^64, mu^6
        sky = mix(sky, u_bounce, 1.0 - smoothstep(-0.12, 0.0, d.z));
        if (mu > u_sun_cos && d.z > 0.0) sky += u_sun_radiance * 40.0;
    }
#ifdef FOG
    // Haze towards the horizon, matching the fog on distant geometry.
    sky = mix(sky, fog_color(d), clamp(u_fog_density * 3.0e4, 0.0, 0.5) * (1.0 - smoothstep(0.0, 0.25, d.z)));
#endif
    f_color = vec4(to_display(sky), 1.0);
    f_id = 0;
#ifdef WITH_NORMAL
    f_normal = vec4(0.0);
#endif
}
"""
