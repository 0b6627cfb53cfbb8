"""sceneforge.engine.client.RenderClient against a real server (extensions and the stock fallback)."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from sceneforge.engine.client import RenderClient, compact_json, parse_address, parse_color
from sceneforge.core.errors import CommandError, ConnectionFailed, ProtocolError
from sceneforge.engine.world import Actor, Camera, Rotator, Transform, instance_color, look_at_rotation

CAM = Camera((0.0, 0.0, 100.0), Rotator(0, 0, 0), 90.0, 160, 120)


def _stock(client: RenderClient) -> RenderClient:
    """Make the client believe it talks to stock UnrealCV (the server is real; only the
    command choice changes), to exercise the UE5 fallback paths."""
    client.templates = [t for t in client.templates if "/sceneforge/" not in t]
    assert not client.is_sceneforge
    return client


def test_helpers():
    assert parse_address("127.0.0.1:9000") == ("127.0.0.1", 9000)
    assert parse_address(("h", "5")) == ("h", 5)
    with pytest.raises(ConnectionFailed, match="HOST:PORT"):
        parse_address("nohost")
    assert compact_json({"env": "winter town"}) == '{"env":"winter\\u0020town"}'
    assert parse_color("(R=1,G=22,B=255,A=255)") == (1, 22, 255)
    with pytest.raises(ProtocolError):
        parse_color("error")


def test_connect_failure_is_raised_not_returned():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connection refused
        with pytest.raises(ConnectionFailed, match=f"127.0.0.1:{port}"):
            RenderClient(f"127.0.0.1:{port}", connect_timeout=0.5).connect()


def test_server_death_raises_connection_failed(tmp_path):
    from sceneforge.engine.server.launch import start_server

    with start_server(port=0, output_dir=tmp_path) as srv:
        client = RenderClient(srv.address, timeout=3).connect()
        assert "Is Listening" in client.status()
        srv.proc.kill()
        srv.proc.wait()
        with pytest.raises(ConnectionFailed):
            for _ in range(3):  # the first send may still succeed into the dead socket
                client.status()
        client.close()


def test_extensions_detected_and_errors_raise(render_client):
    assert render_client.is_sceneforge
    assert "Is Listening" in render_client.status()
    with pytest.raises(CommandError, match="Cannot find object 'ghost'"):
        render_client.object_color("ghost")
    ids = {a["id"] for a in render_client.assets()}
    assert {"primitive_cube", "primitive_sphere"} <= ids


def test_spawn_pose_destroy(render_client):
    c = render_client
    c.spawn(
        [
            Actor("a", "primitive_cube", Transform((100, 0, 0))),
            Actor("b", "primitive_sphere", Transform((0, 100, 0), Rotator(0, 45, 0), (2, 2, 2)), tint=(255, 0, 0)),
        ]
    )
    assert c.objects() == ["a", "b"]
    assert c.object_color("a") == instance_color(0) and c.object_color("b") == instance_color(1)
    assert c.object_colors(["b", "a"]) == {"b": instance_color(1), "a": instance_color(0)}  # one request
    with RenderClient(f"{c.host}:{c.port}") as other:  # stock fallback: one vget per name
        assert _stock(other).object_colors(["a"]) == {"a": instance_color(0)}
    with pytest.raises(CommandError, match="ghost"):
        c.object_colors(["a", "ghost"])
    c.set_pose("a", location=(1, 2, 3), rotation=Rotator(0, 90, 0))
    assert c.object_location("a") == (1.0, 2.0, 3.0)
    assert c.text("vget /object/a/rotation") == "0.000 90.000 0.000"
    assert c.text("vget /object/b/scale") == "2.000 2.000 2.000"
    c.destroy("a")
    assert c.objects() == ["b"]
    c.reset()
    assert c.objects() == []


def test_set_world_validates(render_client):
    render_client.set_world({"env": "winter town", "sun": {"pitch": 20.0, "yaw": 10.0}, "ground": {"color": [250, 250, 250]}})
    with pytest.raises(CommandError, match=r"world\.sky(\.blue)?: unknown field"):
        render_client.set_world({"sky": {"blue": 1}})


@pytest.mark.render
def test_render_returns_backend_arrays(render_client):
    c = render_client
    c.spawn([Actor("box", "primitive_cube", Transform((600, 200, 0)))])
    c.set_camera(0, CAM)
    out = c.render(0, ("lit", "object_mask", "depth", "plane_depth", "normal", "instance_id"))
    assert out["lit"].shape == (120, 160, 3) and out["lit"].dtype == np.uint8
    assert out["depth"].dtype == np.float32 and out["normal"].shape == (120, 160, 3)
    box = np.all(out["object_mask"] == instance_color(0), axis=-1)
    assert box.any() and np.array_equal(box, out["instance_id"] == 1)


@pytest.mark.render
def test_camera_in_the_render_request_equals_set_camera(render_client):
    c = render_client
    c.spawn([Actor("box", "primitive_cube", Transform((600, 200, 0)))])
    c.set_camera(0, CAM)
    separate = c.render(0, ("object_mask", "depth"))
    vis = c.visibility(0, ["box"])
    moved = Camera((0.0, 0.0, 300.0), Rotator(-10, 5, 0), 70.0, 96, 64)
    c.render(0, ("depth",), camera=moved)
    assert c.text("vget /camera/0/size") == "96 64"  # the request moved the camera
    combined = c.render(0, ("object_mask", "depth"), camera=CAM)
    assert all(np.array_equal(separate[k], combined[k]) for k in separate)
    assert c.visibility(0, ["box"], camera=moved) != vis
    assert c.visibility(0, ["box"], camera=CAM) == vis
    assert c.visibility(0, [], camera=CAM) == {}
    with pytest.raises(CommandError, match="camera resolution"):  # validated before rendering
        c.text('vget /sceneforge/render 0 depth {"size":[0,1]}')


@pytest.mark.render
def test_render_async_overlaps_and_matches_render(render_client):
    """The render request is on the wire before the caller waits; replies keep request order,
    errors come back from the waiting function, and the connection stays in step after them."""
    c = render_client
    c.spawn([Actor("box", "primitive_cube", Transform((600, 200, 0)))])
    direct = c.render(0, ("lit", "object_mask"), camera=CAM)
    wait = c.render_async(0, ("lit", "object_mask"), camera=CAM)
    assert callable(wait)
    later = c.send("vget /unrealcv/status")  # pipelined behind the render
    images = wait()
    assert all(np.array_equal(direct[k], images[k]) for k in direct)
    assert b"Is Listening" in later()
    bad = c.send("vget /object/ghost/color")
    with pytest.raises(CommandError, match="ghost"):
        bad()
    assert "Is Listening" in c.status()


def test_replies_read_out_of_order_are_kept_for_their_readers(render_client):
    """A later reply may be read first: the earlier ones read on the way are kept (a sampler
    reads its own request's reply while one queued for the next sample is still unread)."""
    c = render_client
    first = c.send("vget /unrealcv/status")
    bad = c.send("vget /object/ghost/color")
    third = c.send("vget /unrealcv/version")
    assert third() == b"v1.1.0"
    with pytest.raises(CommandError, match="ghost"):  # an error reply is kept as any other
        bad()
    assert b"Is Listening" in first()
    assert "Is Listening" in c.status()  # still in step
    with pytest.raises(ProtocolError, match="read twice"):
        first()  # a caller's bug: the connection is dropped


def test_a_full_server_is_not_a_connection(tmp_path):
    """A greeting other than ``connected ...`` (a full server answers ``error too many
    clients``) is a failed attempt, retried until ``connect_timeout``."""
    import threading

    from sceneforge.engine.protocol import send_frame

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def refuse():
            for _ in range(50):
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                send_frame(conn, b"error too many clients")
                conn.close()

        threading.Thread(target=refuse, daemon=True).start()
        with pytest.raises(ConnectionFailed, match="no UnrealCV server"):
            RenderClient(f"127.0.0.1:{port}", connect_timeout=0.5).connect()


@pytest.mark.render
def test_visibility_counts_occlusion(render_client):
    c = render_client
    eye = (0.0, 0.0, 50.0)
    c.set_camera(0, Camera(eye, look_at_rotation(eye, (800, 0, 50)), 60.0, 160, 120))
    c.spawn(
        [Actor("far", "primitive_cube", Transform((800, 0, 0))), Actor("near", "primitive_cube", Transform((400, 40, 0)))]
    )  # hides part of "far"
    vis = c.visibility(0, ["far", "near"])
    mask = c.render(0, ("object_mask",))["object_mask"]
    assert vis["far"].visible == np.all(mask == instance_color(0), axis=-1).sum()
    assert vis["near"].visible == vis["near"].unoccluded > 0
    assert 0 < vis["far"].visible < vis["far"].unoccluded
    x0, y0, x1, y1 = vis["near"].bbox
    assert 0 <= x0 <= x1 < 160 and 0 <= y0 <= y1 < 120


@pytest.mark.render
def test_stock_fallback_matches_extensions(render_client):
    """The UE5 code path (stock commands only) gives the same images and counts."""
    c = render_client
    eye = (0.0, 0.0, 50.0)
    cam = Camera(eye, look_at_rotation(eye, (800, 0, 50)), 60.0, 160, 120)
    actors = [Actor("far", "primitive_cube", Transform((800, 0, 0))), Actor("near", "primitive_cube", Transform((400, 40, 0)))]
    c.set_camera(0, cam)
    c.spawn(actors)
    ext_vis = c.visibility(0, ["far", "near"])
    ext_img = c.render(0, ("object_mask", "depth"))
    c.reset()
    stock = _stock(c)
    stock.set_camera(0, Camera())  # uses `vrun r.setres`, as on UE; the real camera comes below
    stock.ue_classes = {"cube": "primitive_cube"}  # asset id -> UE class, used by stock spawn
    stock.spawn([Actor(a.name, "cube", a.transform) for a in actors])
    assert stock.objects() == ["far", "near"]
    assert stock.visibility(0, ["far", "near"], camera=cam) == ext_vis  # camera= via stock vsets
    img = stock.render(0, ("object_mask", "depth"))
    assert np.array_equal(img["object_mask"], ext_img["object_mask"])
    assert np.array_equal(img["depth"], ext_img["depth"])
    with pytest.raises(CommandError, match="instance_id"):
        stock.render(0, ("instance_id",))
    stock.reset()
    assert stock.objects() == []


def _two_cubes(c: RenderClient) -> Camera:
    eye = (0.0, 0.0, 50.0)
    c.spawn(
        [Actor("far", "primitive_cube", Transform((800, 0, 0))), Actor("near", "primitive_cube", Transform((400, 40, 0)))]
    )  # hides part of "far"
    return Camera(eye, look_at_rotation(eye, (800, 0, 50)), 60.0, 160, 120)


@pytest.mark.render
def test_render_if_visible_renders_only_what_passes(render_client):
    """One request gives the counts of /sceneforge/visibility and, when they pass the rule, the
    images a separate render gives (same bytes); when they fail, no images."""
    c = render_client
    cam = _two_cubes(c)
    kinds = ("lit", "object_mask", "depth")
    vis = c.visibility(0, ["far", "near"], camera=cam)
    separate = c.render(0, kinds)
    counts, images = c.render_if_visible_async(0, ["far", "near"], kinds, min_visible_ratio=0.0, min_bbox_px=1, camera=cam)()
    assert counts == vis
    assert images is not None and all(np.array_equal(images[k], separate[k]) for k in kinds)
    ratio = vis["far"].visible / vis["far"].unoccluded  # "far" is partly hidden by "near"
    counts, images = c.render_if_visible_async(
        0, ["near", "far"], kinds, min_visible_ratio=min(1.0, ratio + 0.01), min_bbox_px=1, camera=cam
    )()
    assert counts == vis and images is None  # occluded: nothing rendered
    counts, images = c.render_if_visible_async(0, ["near"], kinds, min_visible_ratio=0.0, min_bbox_px=161, camera=cam)()
    assert images is None  # too small for a 161-px box
    assert "Is Listening" in c.status()


@pytest.mark.render
def test_render_if_visible_rejects_hostile_values(render_client):
    c = render_client
    _two_cubes(c)
    for gate, msg in [
        ('{"min_visible_ratio":2}', "min_visible_ratio"),
        ('{"min_bbox_px":-1}', "min_bbox_px"),
        ('{"min_bbox_px":NaN}', "min_bbox_px"),
        ('{"colour":1}', "unknown field"),
        ("[1]", "JSON object"),
        ("{", "invalid JSON"),
    ]:
        with pytest.raises(CommandError, match=msg):
            c.text(f"vget /sceneforge/render_if_visible 0 far lit {gate}")
    with pytest.raises(CommandError, match="unknown kind"):
        c.text('vget /sceneforge/render_if_visible 0 far lit,sparkle {"min_bbox_px":1}')
    with pytest.raises(CommandError, match="ghost"):
        c.text('vget /sceneforge/render_if_visible 0 ghost lit {"min_bbox_px":1}')
    with pytest.raises(ValueError, match="min_visible_ratio"):
        c.render_if_visible_async(0, ["far"], ("lit",), min_visible_ratio=float("nan"), min_bbox_px=1)
    assert c.visibility(0, ["far"])["far"].unoccluded > 0  # still healthy for this client


@pytest.mark.render
def test_render_if_visible_stock_fallback_matches(render_client):
    c = render_client
    cam = _two_cubes(c)
    kinds = ("object_mask", "depth")
    ext = c.render_if_visible_async(0, ["far", "near"], kinds, min_visible_ratio=0.0, min_bbox_px=1, camera=cam)()
    c.reset()
    stock = _stock(c)
    stock.ue_classes = {"cube": "primitive_cube"}
    stock.spawn([Actor("far", "cube", Transform((800, 0, 0))), Actor("near", "cube", Transform((400, 40, 0)))])
    counts, images = stock.render_if_visible_async(0, ["far", "near"], kinds, min_visible_ratio=0.0, min_bbox_px=1, camera=cam)()
    assert counts == ext[0]
    assert all(np.array_equal(images[k], ext[1][k]) for k in kinds)
    assert stock.render_if_visible_async(0, ["far"], kinds, min_visible_ratio=1.0, min_bbox_px=1, camera=cam)()[1] is None
