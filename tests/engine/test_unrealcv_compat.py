"""Drop-in compatibility with code written for the UE UnrealCV plugin (issue 17).

The official ``unrealcv`` client (warnings as errors: every command used must be advertised)
against a ``sceneforge serve`` subprocess: the plugin's command schema, version/echo/help, error
wording, the plugin's BMP byte layout as gym-unrealcv decodes it, depth as EXR/PNG, ``seg``,
optical flow and ``moveto`` on scenes whose answers can be worked out by hand.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import struct

import numpy as np
import pytest
import unrealcv

pytestmark = pytest.mark.filterwarnings("error")

# The 95 templates of UnrealCV's docs/reference/command_schema.json (plugin 1.x), variadic
# alias groups written out below.
SCHEMA = [
    "vget /action/game/is_paused",
    "vget /camera/[uint]/depth [str]",
    "vget /camera/[uint]/fov",
    "vget /camera/[uint]/lit [str]",
    "vget /camera/[uint]/location",
    "vget /camera/[uint]/normal [str]",
    "vget /camera/[uint]/object_mask [str]",
    "vget /camera/[uint]/optical_flow [str]",
    "vget /camera/[uint]/rotation",
    "vget /camera/[uint]/seg [str]",
    "vget /camera/[uint]/size",
    "vget /cameras",
    "vget /level/name",
    "vget /object/[str]/bounds",
    "vget /object/[str]/color",
    "vget /object/[str]/label",
    "vget /object/[str]/location",
    "vget /object/[str]/material",
    "vget /object/[str]/mobility",
    "vget /object/[str]/rotation",
    "vget /object/[str]/scale",
    "vget /object/[str]/uclass_name",
    "vget /object/[str]/vertex_location",
    "vget /objects",
    "vget /persistent_level/id",
    "vget /persistent_level/level_script_actor/id",
    "vget /scene/name",
    "vget /screenshot [str]",
    "vget /unrealcv/echo [str]",
    "vget /unrealcv/help",
    "vget /unrealcv/status",
    "vget /unrealcv/version",
    "vget /viewmode",
    "vset /action/eyes_distance [float]",
    "vset /action/game/level [str]",
    "vset /action/game/pause",
    "vset /action/game/resume",
    "vset /action/input/disable",
    "vset /action/input/enable",
    "vset /action/keyboard [str] [float]",
    "vset /camera/[uint]/auto_brightness [float] [float]",
    "vset /camera/[uint]/auto_speed [float] [float]",
    "vset /camera/[uint]/exposure_bias [float]",
    "vset /camera/[uint]/exposure_method [str]",
    "vset /camera/[uint]/focal [float] [float]",
    "vset /camera/[uint]/fov [float]",
    "vset /camera/[uint]/illumination [str]",
    "vset /camera/[uint]/lit_source [str]",
    "vset /camera/[uint]/location [float] [float] [float]",
    "vset /camera/[uint]/motion_blur [float] [float] [float] [uint]",
    "vset /camera/[uint]/moveto [float] [float] [float]",
    "vset /camera/[uint]/ortho_width [float]",
    "vset /camera/[uint]/physical_exposure [uint]",
    "vset /camera/[uint]/projection_type [str]",
    "vset /camera/[uint]/reflection [str]",
    "vset /camera/[uint]/rotation [float] [float] [float]",
    "vset /camera/[uint]/size [uint] [uint]",
    "vset /cameras/spawn",
    "vset /object/[str]/color [uint] [uint] [uint]",
    "vset /object/[str]/destroy",
    "vset /object/[str]/hide",
    "vset /object/[str]/label [str]",
    "vset /object/[str]/location [float] [float] [float]",
    "vset /object/[str]/material [uint] [str]",
    "vset /object/[str]/name [str]",
    "vset /object/[str]/rotation [float] [float] [float]",
    "vset /object/[str]/scale [float] [float] [float]",
    "vset /object/[str]/show",
    "vset /objects/spawn [str]",
    "vset /objects/spawn [str] [str]",
    "vset /objects/spawn_cube",
    "vset /objects/spawn_cube [str]",
    "vset /viewmode [str]",
    *("vbp" + " [str]" * n for n in range(2, 12)),
    *("vexec" + " [str]" * n for n in range(2, 8)),
    *("vrun" + " [str]" * n for n in range(1, 7)),
]
# Sample arguments per placeholder position that the plugin would accept.
_SAMPLE = {
    "vset /action/game/level [str]": "Demo",
    "vset /viewmode [str]": "lit",
    "vset /camera/[uint]/exposure_method [str]": "manual",
    "vset /camera/[uint]/illumination [str]": "none",
    "vset /camera/[uint]/lit_source [str]": "ldr",
    "vset /camera/[uint]/projection_type [str]": "perspective",
    "vset /camera/[uint]/reflection [str]": "none",
    "vset /object/[str]/name [str]": "box2",
}
# The plugin's own error replies for what it (or this renderer) does not have.
_PLUGIN_ERRORS = {
    "vset /action/eyes_distance [float]": "error Not Implemented",
    "vbp": "error Argument Invalid",
    "vexec": "error Argument Invalid",
}


@pytest.fixture
def uclient(server):
    c = unrealcv.Client(("127.0.0.1", server.port))
    with contextlib.redirect_stdout(io.StringIO()):
        assert c.connect()
    assert c.request("vset /sceneforge/reset") == "ok"
    assert c.request("vset /camera/0/pose 0 0 50 0 0 0") == "ok"
    assert c.request("vset /camera/0/size 160 120") == "ok"
    assert c.request("vset /camera/0/fov 90") == "ok"
    yield c
    for cmd in (
        "vset /camera/0/exposure_bias 0",
        "vset /camera/0/lit_source ftc_hdr",
        "vset /viewmode lit",
        "vset /action/game/resume",
        "vset /sceneforge/reset",
        "vset /camera/0/size 320 240",
    ):
        c.request(cmd)
    with contextlib.redirect_stdout(io.StringIO()):
        c.disconnect()


def _instantiate(template: str) -> str:
    """A concrete command for a schema template (object 'box', camera 0, plausible values)."""
    if template in _SAMPLE:
        head = template.rsplit(" ", 1)[0].replace("[uint]", "0").replace("[str]", "box")
        return head + " " + _SAMPLE[template]
    words = template.split()
    verb, rest = words[0], words[1:]
    if verb in ("vbp", "vexec"):
        return " ".join([verb, "box", "GetSomething"] + ["1"] * (len(rest) - 2))
    if verb == "vrun":
        return " ".join(["vrun", "t.MaxFPS"] + ["30"] * (len(rest) - 1))
    path = rest[0].replace("[uint]", "0").replace("[str]", "box")
    fill = {"[float]": "1", "[uint]": "1", "[str]": "png"}
    args = [fill[a] for a in rest[1:]]
    if path.endswith("/keyboard"):
        args = ["W", "0.1"]
    if path.endswith(("/label", "/echo")) and args:
        args = ["hello"]
    if path.endswith("/material") and verb == "vset":
        args = ["0", "/sceneforge/primitive_cube/VertexColor"]
    if path.endswith("/spawn"):
        args = ["primitive_sphere", "ball"][: len(args)]
    if path.endswith("/spawn_cube") and args:
        args = ["cube7"]
    return " ".join([verb, path] + args)


@pytest.mark.render
def test_every_schema_template_works_or_answers_with_the_plugins_error(uclient):
    assert len(SCHEMA) == 95 and len(set(SCHEMA)) == 95
    assert uclient.request("vset /objects/spawn primitive_cube box") == "box"
    for template in SCHEMA:
        cmd = _instantiate(template)
        reply = uclient.request(cmd)
        expected = _PLUGIN_ERRORS.get(template) or _PLUGIN_ERRORS.get(template.split()[0])
        if expected:
            assert reply == expected, (cmd, reply)
        else:
            assert isinstance(reply, bytes) or not reply.startswith("error"), (cmd, reply)
        if cmd.startswith(("vset /object/box/destroy", "vset /action/game/level")):
            uclient.request("vset /objects/spawn primitive_cube box")
        if cmd.startswith("vset /object/box/name"):
            uclient.request("vset /object/box2/name box")


def test_version_parses_as_the_upstream_suite_and_client_do(uclient, server):
    from unrealcv.api_version import ApiVersionManager

    version = uclient.request("vget /unrealcv/version")
    assert re.fullmatch(r"v\d+\.\d+\.\d+", version)
    assert tuple(int(v) for v in version.lstrip("v").split(".")) >= (1, 1, 0)  # upstream test/server
    assert ApiVersionManager.parse_version_tuple(version) >= ApiVersionManager.COMMAND_CAPABILITY_MIN_VERSION
    status = uclient.request("vget /unrealcv/status")
    assert re.search(r"Config file: (.+?)\n", status) and "Port:" in status and "Width:" in status
    assert re.search(r"^Server: sceneforge \S+$", status, re.M)


def test_echo_help_scene_and_empty_scene_colour(uclient):
    assert uclient.request("vget /unrealcv/echo contract_check") == "contract_check"
    lines = uclient.request("vget /unrealcv/help").splitlines()
    templates = uclient.request("vget /unrealcv/commands").splitlines()
    assert lines[0::2] == templates and all(lines[1::2])  # template, then its help line
    assert "vget /unrealcv/status" in lines and "vget /unrealcv/version" in lines
    assert uclient.request("vget /scene/name") == "sceneforge"
    assert uclient.request("vget /objects") == ""
    for name in uclient.request("vget /objects").split(" "):  # upstream object_test on an empty scene
        assert uclient.request(f"vget /object/{name}/color") == "(R=0,G=0,B=0,A=255)"


def test_error_wording_matches_the_plugin(uclient):
    with pytest.warns(UserWarning, match="may not support"):
        reply = uclient.request("vget /unrealcv/this_command_does_not_exist")
    assert reply.startswith("error No handler found") and "Can not find a handler" in reply
    assert uclient.request("vget /object/ghost/location").startswith("error Cannot find object")
    assert uclient.request("vget /camera/7/location").startswith("error Invalid sensor id")
    assert uclient.request("vset /viewmode sepia") == "error Can not set ViewMode to sepia"
    assert uclient.request("vget /camera/0/lit jpg") == "error Invalid filename type, filename jpg"
    assert uclient.request("vset /camera/2/moveto 0 0 0") == "error MoveTo only supports the player camera with id 0"
    assert uclient.request("vbp ghost Jump") == "error Can not find actor with id 'ghost'"
    assert uclient.request("vset /camera/0/projection_type orthographic") == "error Not Implemented"


def test_game_actions_are_successful_no_ops(uclient):
    assert uclient.request("vget /action/game/is_paused") == "false"
    assert uclient.request("vset /action/game/pause") == "ok"
    assert uclient.request("vget /action/game/is_paused") == "true"
    assert uclient.request("vset /action/game/resume") == "ok"
    assert uclient.request("vset /viewmode object_mask") == "ok" and uclient.request("vget /viewmode") == "object_mask"
    assert uclient.request("vrun slomo 0.5") == "ok"
    assert uclient.request("vrun r.setres 64x48w") == "ok"
    assert uclient.request("vget /camera/0/size") == "64 48"


def _box(uclient, name="box", x=500.0, y=0.0):
    assert uclient.request(f"vset /objects/spawn primitive_cube {name}") == name
    assert uclient.request(f"vset /object/{name}/location {x} {y} 0") == "ok"


@pytest.mark.render
def test_bmp_is_the_plugins_32_bit_top_down_layout_and_gym_decode_works(uclient):
    _box(uclient)
    data = uclient.request("vget /camera/0/lit bmp")
    w, h = 160, 120
    assert len(data) == 54 + 4 + w * h * 4
    magic, size, _, _, offset = struct.unpack_from("<2sIHHI", data, 0)
    bi_size, bi_w, bi_h, planes, bits, compression = struct.unpack_from("<IiiHHI", data, 14)
    assert (magic, size, offset, bi_size, bi_w, bi_h, planes, bits, compression) == (
        b"BM",
        54 + w * h * 4,
        54,
        40,
        w,
        -h,
        1,
        32,
        0,
    )
    assert struct.unpack_from("<i", data, 54)[0] == w * h * 4  # UE's TArray element count
    gym = np.frombuffer(data, np.uint8)[-h * w * 4 :].reshape(h, w, 4)  # gym-unrealcv's UnrealCv.decode_bmp
    png = np.asarray(__import__("PIL.Image").Image.open(io.BytesIO(uclient.request("vget /camera/0/lit png"))))
    assert np.array_equal(gym[..., 2::-1], png[..., :3]) and (gym[..., 3] == 255).all()  # BGRA vs RGBA


@pytest.mark.render
def test_seg_is_object_mask_and_depth_comes_as_exr_and_png(uclient, server_output_dir):
    OpenEXR = pytest.importorskip("OpenEXR")
    import cv2

    _box(uclient)
    assert uclient.request("vget /camera/0/seg png") == uclient.request("vget /camera/0/object_mask png")
    depth = np.load(io.BytesIO(uclient.request("vget /camera/0/depth npy")))
    path = uclient.request("vget /camera/0/depth depth/d.exr")
    assert path.endswith("depth/d.exr")
    with OpenEXR.File(path) as f:
        exr = next(iter(f.channels().values())).pixels
    assert exr.dtype == np.float32 and np.array_equal(exr, depth)  # inf (sky) kept
    png = cv2.imdecode(np.frombuffer(uclient.request("vget /camera/0/depth png"), np.uint8), cv2.IMREAD_UNCHANGED)
    assert png.dtype == np.uint16 and png[60, 80] == round(depth[60, 80]) == 450
    assert (png[~np.isfinite(depth)] == 0).all()


@pytest.mark.render
def test_optical_flow_between_consecutive_requests_is_the_hand_computed_shift(uclient):
    _box(uclient)  # front face at x = 450, camera at the origin looking along +X, f = 80 px
    f = 80.0 / math.tan(math.radians(45))
    first = np.load(io.BytesIO(uclient.request("vget /camera/0/optical_flow npy")))
    assert first.shape == (120, 160, 2) and not first.any()  # no previous frame yet
    uclient.request("vset /camera/0/location 0 10 50")  # 10 cm right: the face moves left
    flow = np.load(io.BytesIO(uclient.request("vget /camera/0/optical_flow npy")))
    assert flow[60, 80, 0] == pytest.approx(-f * 10 / 450, abs=0.02) and abs(flow[60, 80, 1]) < 0.02
    uclient.request("vset /object/box/location 500 -20 0")  # camera still, the box moves 20 cm left
    flow = np.load(io.BytesIO(uclient.request("vget /camera/0/optical_flow npy")))
    assert flow[60, 80, 0] == pytest.approx(-f * 20 / 450, abs=0.02)
    sky = flow[5, 80]  # above the box: sky, static
    assert np.abs(sky).max() < 1e-3
    colours = __import__("cv2").imdecode(np.frombuffer(uclient.request("vget /camera/0/optical_flow bmp"), np.uint8), 1)
    assert colours is not None and colours.shape[:2] == (120, 160)


@pytest.mark.render
def test_exposure_bias_and_lit_source_change_the_lit_image(uclient):
    _box(uclient)
    base = np.load(io.BytesIO(uclient.request("vget /camera/0/lit npy"))).astype(float)
    assert uclient.request("vset /camera/0/exposure_bias -1") == "ok"
    darker = np.load(io.BytesIO(uclient.request("vget /camera/0/lit npy"))).astype(float)
    lit = base > 30
    assert (darker[lit] < base[lit]).all()
    assert uclient.request("vset /camera/0/lit_source normal") == "ok"
    normal_png = uclient.request("vget /camera/0/normal png")
    assert uclient.request("vget /camera/0/lit png") == normal_png


@pytest.mark.render
def test_moveto_stops_at_geometry_but_location_teleports(uclient):
    _box(uclient)  # cube spans x 450..550
    assert uclient.request("vset /camera/0/moveto 1000 0 50") == "ok"
    x = float(uclient.request("vget /camera/0/location").split()[0])
    assert 450 - 35 - 0.1 <= x < 450 - 35 + 1e-6  # the 35 cm pawn sphere touches the face
    assert uclient.request("vset /camera/0/moveto 400 300 50") == "ok"  # clear path sideways
    assert uclient.request("vget /camera/0/location") == "400.000 300.000 50.000"
    assert uclient.request("vset /camera/0/location 1000 0 50") == "ok"  # teleport ignores it
    assert uclient.request("vget /camera/0/location").startswith("1000.000")
    assert uclient.request("vset /camera/0/moveto 1000 0 -200") == "ok"  # flat ground at z = 0
    z = float(uclient.request("vget /camera/0/location").split()[2])
    assert 35.0 <= z <= 40.0  # the sphere stops within one 5 cm step above the ground


def test_object_extras_rename_label_vertices(uclient):
    assert uclient.request("vset /objects/spawn_cube") == "CubeActor_0"
    assert uclient.request("vget /object/CubeActor_0/label") == "CubeActor_0"
    assert uclient.request("vset /object/CubeActor_0/label Crate") == "ok"
    colour = uclient.request("vget /object/CubeActor_0/color")
    assert uclient.request("vset /object/CubeActor_0/name crate") == "ok"
    assert uclient.request("vget /objects") == "crate"
    assert uclient.request("vget /object/crate/color") == colour
    assert uclient.request("vget /object/crate/label") == "Crate"
    assert uclient.request("vget /object/crate/mobility") == "Movable"
    rows = [list(map(float, r.split())) for r in uclient.request("vget /object/crate/vertex_location").splitlines()]
    corners = np.array(rows)
    assert corners.min(axis=0).tolist() == [-50, -50, 0] and corners.max(axis=0).tolist() == [50, 50, 100]
