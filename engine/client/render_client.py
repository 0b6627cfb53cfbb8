"""Typed client for a render server speaking the UnrealCV protocol (ours or UE5 + UnrealCV).

It speaks the UnrealCV wire protocol itself (``engine/protocol.py``: the framing the official
``unrealcv.Client`` uses, so UE5 + UnrealCV servers work unchanged) on one blocking socket, with
connect retries and timeouts; ``error ...`` replies and lost connections become exceptions
(:class:`ConnectionFailed`, :class:`CommandError`); typed values (``Actor``, ``Camera``) become
command strings only at the socket; images are decoded into numpy arrays.

Why not the official client (it was wrapped until 2026-11-25): it reads replies on a receive
thread and hands each one over through two queues, and checks every command against the server's
template list; per request that cost ~0.5 ms of client CPU and two thread switches on a 2-core
machine, for nothing our client needs. Here the caller reads its own reply, and requests can be
pipelined (:meth:`RenderClient.render_async`: the server renders while the caller works; replies
come back in request order). The official client is still what the server's compatibility tests
(``tests/engine/test_unrealcv_compat.py``) and docs/server.md's examples use.

On our server (``/sceneforge/`` in ``vget /unrealcv/commands``) it uses the batched extensions;
on a real UE5 server it falls back to stock commands (see ``engine/client/stock.py`` and
docs/server.md). One ``RenderClient`` per thread (it owns one socket; framing in engine/wire.py).

>>> from sceneforge.engine.client import RenderClient
>>> with RenderClient("127.0.0.1:9000") as c:                      # doctest: +SKIP
...     c.spawn([Actor("cube", "primitive_cube", Transform((500, 0, 0)))])
...     images = c.render(0, ("lit", "object_mask", "depth"))      # dict of numpy arrays
"""

from __future__ import annotations

import json
import logging
import time
from typing import Callable, Iterable

from sceneforge.core.errors import CommandError, ConnectionFailed, ProtocolError
from sceneforge.engine.client.codec import camera_json, decode_image, parse_address, parse_color, parse_vec  # noqa: F401 - the client's names
from sceneforge.engine.client.images import ImageRequests
from sceneforge.engine.client.stock import spawn_stock
from sceneforge.engine.protocol import compact_json  # noqa: F401 - the client's name
from sceneforge.engine.wire import Wire
from sceneforge.core.types import PixelCount  # noqa: F401 - the client's name for the counts it returns
from sceneforge.engine.world import Actor, Camera, Rotator

log = logging.getLogger(__name__)


class RenderClient(ImageRequests):
    """Typed calls against one render server. See the module docstring for an example."""

    def __init__(
        self,
        address: "str | tuple[str, int]",
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        ue_classes: dict[str, str] | None = None,
    ) -> None:
        """``ue_classes`` maps asset ids to UE class/blueprint names for the stock fallback
        (e.g. from ``AssetInfo.unreal_class``); unmapped ids are sent as they are."""
        self.host, self.port = parse_address(address)
        self.ue_classes = dict(ue_classes or {})
        self.timeout, self.connect_timeout = float(timeout), float(connect_timeout)
        self._client = None
        self.templates: list[str] = []
        self.spawned: list[str] = []  # names this client created (stock fallback needs them)
        self._stock_passed: set[str] = set()  # render_if_visible tokens that passed (stock fallback)
        self._warned_world = False

    # --- connection --------------------------------------------------------------------------
    def connect(self) -> "RenderClient":
        """Connect, retrying until ``connect_timeout``; learns the server's command set."""
        deadline, attempts = time.monotonic() + self.connect_timeout, 0
        while True:
            wire = Wire.open(self.host, self.port, self.timeout, min(5.0, self.connect_timeout))
            attempts += 1
            if wire is not None:
                break
            if time.monotonic() > deadline:
                raise ConnectionFailed(
                    f"no UnrealCV server at {self.host}:{self.port} ({attempts} attempts in {self.connect_timeout:.0f}s)"
                )
            time.sleep(0.2)
        self._client = wire
        self.templates = self.text("vget /unrealcv/commands").splitlines()
        return self

    @property
    def is_sceneforge(self) -> bool:
        """True when the server offers our ``/sceneforge/`` extensions."""
        return any("/sceneforge/" in t for t in self.templates)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "RenderClient":
        return self if self._client is not None else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # --- raw requests ------------------------------------------------------------------------
    def request(self, command: str) -> "str | bytes":
        """Send one command; ``error ...`` → CommandError, lost connection → ConnectionFailed.
        The reply is text when it is valid UTF-8, else bytes (as the official client returns it)."""
        reply = self._call(command)
        try:
            return reply.decode("utf-8")
        except UnicodeDecodeError:
            return reply

    def send(self, command: str) -> Callable[[], bytes]:
        """Send ``command`` now and return a function that reads its reply (raw bytes, errors
        raised as in :meth:`request`). Replies must be read in the order the commands were sent;
        the server works on this one while the caller does something else."""
        wire = self._wire(command)
        try:
            rid = wire.send(command)
        except OSError as e:
            raise ConnectionFailed(f"{self.host}:{self.port}: {command[:60]!r}: {e}") from None

        def reply() -> bytes:
            try:
                body = wire.receive(rid)
            except OSError as e:
                self._client = None if self._client is wire else self._client
                what = "closed the connection" if isinstance(e, ConnectionError) else f"failed ({e})"
                raise ConnectionFailed(f"{self.host}:{self.port} {what} during {command[:60]!r}") from None
            except ProtocolError:
                self._client = None if self._client is wire else self._client
                raise
            if body.startswith(b"error"):
                raise CommandError(f"{command[:80]}: {body[:300].decode('utf-8', errors='replace')}")
            return body

        reply.discard = lambda: wire.discard(rid)  # type: ignore[attr-defined] - nobody will read it
        return reply

    def _call(self, command: str) -> bytes:
        return self.send(command)()

    def _wire(self, command: str) -> Wire:
        if self._client is None or self._client.closed:
            self._client = None
            raise ConnectionFailed(f"not connected to {self.host}:{self.port} ({command[:60]!r})")
        return self._client

    def text(self, command: str) -> str:
        return self._call(command).decode("utf-8", errors="replace")

    def binary(self, command: str) -> bytes:
        return self._call(command)

    # --- server and world --------------------------------------------------------------------
    def status(self) -> str:
        return self.text("vget /unrealcv/status")

    def info(self) -> dict:
        return json.loads(self.text("vget /sceneforge/info")) if self.is_sceneforge else {"backend": "unrealcv"}

    def assets(self) -> list[dict]:
        self._require_ext("assets")
        return json.loads(self.text("vget /sceneforge/assets"))

    def set_world(self, world: dict) -> None:
        """Sun/sky/ground/env (our server); a UE level owns its lighting, so stock ignores it."""
        self.set_world_async(world)()

    def set_world_async(self, world: dict) -> Callable[[], None]:
        """:meth:`set_world`, split in two as :meth:`render_async`: the returned function waits
        for the acknowledgement (a request queued before a render needs no round trip of its own)."""
        if self.is_sceneforge:
            return _ack(self.send("vset /sceneforge/world " + compact_json(world)))
        if not self._warned_world:  # once per client: a generator sends a world per sample
            log.warning("set_world ignored: a UnrealCV (UE) server's level defines its own world")
            self._warned_world = True
        return _ack(None)

    def reset(self) -> None:
        """Remove every actor (ours) / every actor this client spawned (stock)."""
        self.reset_async()()

    def reset_async(self) -> Callable[[], None]:
        """:meth:`reset`, split in two as :meth:`render_async` (a stock server is answered at once)."""
        if self.is_sceneforge:
            reply = self.send("vset /sceneforge/reset")
        else:
            for name in list(self.spawned):
                self.destroy(name)
            reply = None
        self.spawned.clear()
        return _ack(reply)

    # --- objects -----------------------------------------------------------------------------
    def objects(self) -> list[str]:
        return self.text("vget /objects").split()

    def spawn(self, actors: Iterable[Actor]) -> None:
        """Spawn a batch (one command on our server, 4-5 per actor on UE). Instance colours are
        the server's: read them with :meth:`object_color`."""
        self.spawn_async(actors)()

    def spawn_async(self, actors: Iterable[Actor]) -> Callable[[], None]:
        """:meth:`spawn`, split in two as :meth:`render_async` (one request on our server when no
        actor is hidden; otherwise, and on a stock server, answered at once)."""
        actors = list(actors)
        reply = None
        if self.is_sceneforge:
            reply = self.send("vset /sceneforge/spawn " + compact_json([_actor_json(a) for a in actors]))
        else:
            spawn_stock(self, actors)
        self.spawned += [a.name for a in actors]
        hidden = [a.name for a in actors if a.hidden]
        if reply is not None and hidden:
            reply()
            reply = None
        for name in hidden:
            self.text(f"vset /object/{name}/hide")
        return _ack(reply)

    def set_pose(self, name: str, location=None, rotation=None, scale=None) -> None:
        self.set_poses({name: {"location": location, "rotation": rotation, "scale": scale}})

    def set_poses(self, poses: dict[str, dict]) -> None:
        """``{name: {"location": (x,y,z), "rotation": Rotator|(p,y,r), "scale": ...}}``."""
        self.set_poses_async(poses)()

    def set_poses_async(self, poses: dict[str, dict]) -> Callable[[], None]:
        """:meth:`set_poses`, split in two as :meth:`render_async` (one request on our server;
        a stock server is answered at once): the returned function waits for the acknowledgement."""
        clean = {n: {k: _triple(v) for k, v in p.items() if v is not None} for n, p in poses.items()}
        if self.is_sceneforge:
            return _ack(self.send("vset /sceneforge/poses " + compact_json(clean)))
        for name, pose in clean.items():
            for key, value in pose.items():
                self.text(f"vset /object/{name}/{key} " + " ".join(f"{v:.6f}" for v in value))
        return _ack(None)

    def set_character_poses(self, poses: dict[str, dict]) -> None:
        """``{name: {"clip": "walk"|"run"|"idle", "phase": cycles}}`` for skinned characters
        (spawned with a ``character:...`` asset id; our server only: engine/server/characters.py)."""
        if not self.is_sceneforge:
            raise CommandError("character poses need a sceneforge render server (no UnrealCV equivalent)")
        clean = {n: {"clip": str(p["clip"]), "phase": float(p["phase"])} for n, p in poses.items()}
        self.text("vset /sceneforge/character_poses " + compact_json(clean))

    def destroy(self, name: str) -> None:
        self.text(f"vset /object/{name}/destroy")
        if name in self.spawned:
            self.spawned.remove(name)

    def object_color(self, name: str) -> tuple[int, int, int]:
        return parse_color(self.text(f"vget /object/{name}/color"))

    def object_colors(self, names: Iterable[str]) -> dict[str, tuple[int, int, int]]:
        """Instance colours of ``names``: one request on our server, one per name on stock."""
        return self.object_colors_async(names)()

    def object_colors_async(self, names: Iterable[str]) -> Callable[[], dict[str, tuple[int, int, int]]]:
        """:meth:`object_colors`, split in two as :meth:`render_async` (stock: answered at once)."""
        names = list(names)
        if self.is_sceneforge and names:
            reply = self.send("vget /sceneforge/colors " + ",".join(names))

            def colors() -> dict[str, tuple[int, int, int]]:
                raw = json.loads(reply())
                try:
                    return {n: tuple(int(v) for v in raw[n]) for n in names}  # type: ignore[misc]
                except (KeyError, TypeError, ValueError) as e:
                    raise ProtocolError(f"colors reply: {e}") from None

            colors.discard = getattr(reply, "discard", lambda: None)  # type: ignore[attr-defined]
            return colors
        result = {n: self.object_color(n) for n in names}
        return lambda: result

    def object_location(self, name: str) -> tuple[float, ...]:
        return parse_vec(self.text(f"vget /object/{name}/location"), "location")

    # --- cameras and images ------------------------------------------------------------------
    def set_camera(self, cam_id: int, camera: Camera) -> None:
        """Pose, horizontal FOV and resolution of camera ``cam_id``."""
        loc, rot = camera.location, camera.rotation.as_tuple()
        if self.is_sceneforge:  # one round trip
            self.text(f"vset /sceneforge/camera {cam_id} {camera_json(camera)}")
            return
        self.text(f"vset /camera/{cam_id}/location {loc[0]:.6f} {loc[1]:.6f} {loc[2]:.6f}")
        self.text(f"vset /camera/{cam_id}/rotation {rot[0]:.6f} {rot[1]:.6f} {rot[2]:.6f}")
        self.text(f"vset /camera/{cam_id}/fov {camera.fov_deg:.6f}")
        self.text(f"vrun r.setres {camera.width}x{camera.height}w")

    def _require_ext(self, what: str) -> None:
        if not self.is_sceneforge:
            raise CommandError(f"{what} needs a sceneforge server ({self.host}:{self.port} is stock UnrealCV)")


def _ack(reply: "Callable[[], bytes] | None") -> Callable[[], None]:
    """A reader of an ``ok`` reply (None: answered already), with ``discard()`` (nobody will read it)."""

    def acknowledged() -> None:
        if reply is not None:
            reply()

    acknowledged.discard = getattr(reply, "discard", lambda: None)  # type: ignore[attr-defined]
    return acknowledged


def _triple(value) -> list[float]:
    if isinstance(value, Rotator):
        value = value.as_tuple()
    return [float(v) for v in value]


def _actor_json(actor: Actor) -> dict:
    t = actor.transform
    return {
        "name": actor.name,
        "asset": actor.asset_id,
        "location": list(t.location),
        "rotation": list(t.rotation.as_tuple()),
        "scale": list(t.scale),
        "tint": list(actor.tint) if actor.tint is not None else None,
    }
