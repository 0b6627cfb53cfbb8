"""Post-processing of the ``lit`` image only: FXAA on a full-screen triangle.

Labels (ids, masks, depth) never pass through here, so anti-aliasing cannot change them.
"""

# FXAA (after Timothy Lottes' FXAA 3.11 "console" variant, as popularised for WebGL): luma edge
# detection on the 4 diagonal neighbours, one blur direction, 2 + 2 taps along it.
POST_VS = """
out vec2 v_uv;
void main() {
    vec2 p = vec2(float((gl_VertexID & 1) * 4 - 1), float((gl_VertexID & 2) * 2 - 1));
    v_uv = p * 0.5 + 0.5;
    gl_Position = vec4(p, 0.0, 1.0);
}
"""

FXAA_FS = """
uniform sampler2D u_color;
uniform vec2 u_texel;
in vec2 v_uv;
layout(location = 0) out vec4 f_color;
float luma(vec3 c) { return dot(c, vec3(0.299, 0.587, 0.114)); }
void main() {
    // Neighbourhood by texelFetch (no filtering: ~4x cheaper on llvmpipe than bilinear taps);
    // only pixels on an edge pay for the 4 filtered taps along the edge.
    ivec2 p = ivec2(gl_FragCoord.xy);
    ivec2 hi = textureSize(u_color, 0) - 1;
    vec3 rgbM = texelFetch(u_color, p, 0).rgb;
    vec3 rgbNW = texelFetch(u_color, clamp(p + ivec2(-1, -1), ivec2(0), hi), 0).rgb;
    vec3 rgbNE = texelFetch(u_color, clamp(p + ivec2(1, -1), ivec2(0), hi), 0).rgb;
    vec3 rgbSW = texelFetch(u_color, clamp(p + ivec2(-1, 1), ivec2(0), hi), 0).rgb;
    vec3 rgbSE = texelFetch(u_color, clamp(p + ivec2(1, 1), ivec2(0), hi), 0).rgb;
    float lNW = luma(rgbNW), lNE = luma(rgbNE), lSW = luma(rgbSW), lSE = luma(rgbSE), lM = luma(rgbM);
    float lMin = min(lM, min(min(lNW, lNE), min(lSW, lSE)));
    float lMax = max(lM, max(max(lNW, lNE), max(lSW, lSE)));
    if (lMax - lMin < max(0.0312, lMax * 0.125)) { f_color = vec4(rgbM, 1.0); return; }
    vec2 dir = vec2(-((lNW + lNE) - (lSW + lSE)), ((lNW + lSW) - (lNE + lSE)));
    float reduce = max((lNW + lNE + lSW + lSE) * (0.25 * 0.125), 1.0 / 128.0);
    float rcp = 1.0 / (min(abs(dir.x), abs(dir.y)) + reduce);
    dir = clamp(dir * rcp, vec2(-8.0), vec2(8.0)) * u_texel;
    vec3 rgbA = 0.5 * (texture(u_color, v_uv + dir * (1.0 / 3.0 - 0.5)).rgb
                     + texture(u_color, v_uv + dir * (2.0 / 3.0 - 0.5)).rgb);
    vec3 rgbB = rgbA * 0.5 + 0.25 * (texture(u_color, v_uv - dir * 0.5).rgb + texture(u_color, v_uv + dir * 0.5).rgb);
    float lB = luma(rgbB);
    f_color = vec4((lB < lMin || lB > lMax) ? rgbA : rgbB, 1.0);
}
"""
