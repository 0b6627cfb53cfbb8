"""Issue 48 item 6: a 400-digit integer (JSON has no size limit) or 1e300 where the protocol
expects a number used to reach ``float()``/``math.isfinite`` and come back as ``error internal
OverflowError`` (355 of the outside harness's fuzz frames). Now each is the plugin's ordinary
one-line ``error <field>: ...`` reply naming the field, and the server keeps serving."""

from __future__ import annotations

import pytest

from wire_helpers import ask, greeted

BIG = "9" * 400

FRAMES = [
    ('vset /sceneforge/world {"sun":{"pitch":%s}}' % BIG, "world.sun.pitch"),
    ('vset /sceneforge/world {"ground":{"extent":%s}}' % BIG, "world.ground.extent"),
    ('vset /sceneforge/world {"sky":{"ambient":-%s}}' % BIG, "world.sky.ambient"),
    ('vset /sceneforge/world {"fog":{"density":%s}}' % BIG, "world.fog.density"),
    ("vset /camera/0/moveto 1e300 1e300 1e300", "moveto.x"),
    ("vset /camera/0/moveto %s 0 0" % BIG, "moveto"),
    ("vset /camera/0/location %s 0 0" % BIG, "location"),
    ("vset /camera/0/fov %s" % BIG, "fov"),
    ('vset /sceneforge/spawn [{"name":"h","asset":"primitive_cube","location":[%s,0,0]}]' % BIG, "spawn[0].location"),
    ('vset /sceneforge/spawn [{"name":"h","asset":"primitive_cube","rotation":[0,%s,0]}]' % BIG, "spawn[0].rotation"),
    ('vset /sceneforge/spawn [{"name":"h","asset":"primitive_cube","scale":[1,1,%s]}]' % BIG, "spawn[0].scale"),
    ('vset /sceneforge/camera 0 {"location":[%s,0,0]}' % BIG, "camera.location"),
    ('vset /sceneforge/camera 0 {"fov":%s}' % BIG, "camera.fov"),
    ('vget /sceneforge/render 0 lit {"size":[32,32],"fov":%s}' % BIG, "camera.fov"),
    ('vget /sceneforge/render 0 lit {"size":[32,32],"location":[0,0,%s]}' % BIG, "camera.location"),
]


@pytest.mark.parametrize("command, field", FRAMES, ids=[f"{i}-{f}" for i, (_, f) in enumerate(FRAMES)])
def test_huge_numbers_are_one_error_line_naming_the_field(server, command, field):
    with greeted(server, timeout=120) as s:
        reply = ask(s, b"1:" + command.encode())
        assert reply.startswith(b"1:error ") and b"internal" not in reply and b"Overflow" not in reply, reply[:200]
        assert field.encode() in reply, reply[:200]
        assert len(reply) < 400, "the 400-digit value is quoted in full"
        assert ask(s, b"2:vget /unrealcv/status").startswith(b"2:Is Listening")
        assert ask(s, b"3:vset /sceneforge/world {}") == b"3:ok"
