"""Alpha-tested (cut-out) geometry in the id, coverage and shadow passes.

Foliage cards must be cut out where the lit pass cuts them, or masks and pixel counts would
cover leaves that are not drawn. One vertex shader (parameterised by its view-projection uniform)
and one alpha test serve all three passes.
"""

_ALPHA_TEST = """
uniform sampler2D u_albedo;
uniform float u_alpha_cutoff;
uniform float u_base_alpha;
in vec2 v_uv;
"""
_DISCARD = "    if (texture(u_albedo, v_uv).a * u_base_alpha < u_alpha_cutoff) discard;\n"


def _vertex(view_proj: str) -> str:
    return f"""
uniform mat4 {view_proj};
uniform mat4 u_model;
in vec3 in_pos;
in vec2 in_uv;
out vec2 v_uv;
void main() {{
    v_uv = in_uv;
    gl_Position = {view_proj} * (u_model * vec4(in_pos, 1.0));
}}
"""


ALPHA_VS = _vertex("u_view_proj")
ALPHA_SHADOW_VS = _vertex("u_light_vp")

ALPHA_IDS_FS = (
    "uniform int u_id;" + _ALPHA_TEST + "layout(location = 0) out int f_id;\nvoid main() {\n" + _DISCARD + "    f_id = u_id;\n}\n"
)
ALPHA_COVER_FS = (
    "uniform vec4 u_channel;"
    + _ALPHA_TEST
    + "layout(location = 0) out vec4 f_cover;\nvoid main() {\n"
    + _DISCARD
    + "    f_cover = u_channel;\n}\n"
)
ALPHA_SHADOW_FS = _ALPHA_TEST + "void main() {\n" + _DISCARD + "}\n"
# shaders.IDS_COVER_FS for cut-out parts: a discarded fragment covers nothing
ALPHA_IDS_COVER_FS = (
    "#version 450 core\nlayout(r32ui, binding = 0) uniform coherent uimage2D u_cover;\n"
    "uniform int u_id;\nuniform uint u_bit;" + _ALPHA_TEST + "layout(location = 0) out int f_id;\n"
    "void main() {\n" + _DISCARD + "    imageAtomicOr(u_cover, ivec2(gl_FragCoord.xy), u_bit);\n"
    "    f_id = u_id;\n}\n"
)
