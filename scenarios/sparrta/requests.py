"""What a sparrta ``Session`` asks of the render server, and how it queues it.

Every request is sent without waiting (``RenderClient.*_async``) and read later through the
function it returns: a candidate view's request (its look, the allo figure's pose, then
``/sceneforge/render_if_visible``: pixel counts and, when they pass, the images), a scene
group's reset + spawn + colour query, and the world. The client's wire keeps replies read out of
order for their own readers (engine/wire.py), so several requests can be in flight: the
sampler queues the next candidate and the next samples' first candidates behind the one it is
reading (scenario.py ``Session.make``, early.py). Images and counts are pure functions of the
scene, camera and look, so none of this ordering reaches the bytes written.

:class:`ServerRequests` is a mixin of ``Session``; it uses the session's ``cfg``, ``client``,
``env()``, ``early`` and the server-state fields set in ``Session.__init__`` (``_world``,
``_scene_key``, ``_sent_look``, ``_look``, ``_colors``, ``colors_kept``, ``_session_id``).
"""

from __future__ import annotations

from sceneforge.scenarios.sampling.consistency import needs_depth
from sceneforge.scenarios.world.look import server_world
from sceneforge.scenarios.sampling.rejection import Placed
from sceneforge.scenarios.sparrta.config import Unit
from sceneforge.scenarios.sparrta.scene import Group, Setting

PARKED_Z = -1.0e5  # cm: where the allo figure waits (far below the ground) when a scene is built


class ServerRequests:
    """The server side of a sparrta ``Session`` (see the module docstring)."""

    def holds(self, unit: Unit, group: Group) -> bool:
        """Does the server hold ``group`` (as far as the requests sent so far go)?"""
        return self._world == unit.env and self._scene_key == group.key

    def show(self, unit: Unit, group: Group) -> None:
        """Make the server hold exactly this group's actors, spawned in a fixed order (the allo
        figure last, parked far below the ground until ``place_human`` moves it).

        The server's images are a pure function of the scene (its shadow cache is keyed by the
        scene, not by render history), so nothing here depends on earlier scenes.
        """
        if self.holds(unit, group):
            return
        for read in self._scene_requests(unit, group):
            read()

    def _scene_requests(self, unit: Unit, group: Group) -> list:
        """Send what makes the server hold ``group`` (its environment's world when it changes, a
        reset, the spawn, the instance colours' query) without waiting; returns the reply readers,
        to be called in order (the colours are kept per group: :meth:`colors_of`)."""
        reads = []
        if self._world != unit.env:
            reads.append(self.client.set_world_async(self.env(unit.env).world))
            self._world, self._scene_key, self._sent_look = unit.env, None, None
        if self._scene_key == group.key:
            return reads
        reads.append(self.client.reset_async())
        actors = list(group.actors)
        if group.viewpoint is not None:
            parked = Placed("human", group.viewpoint, group.source.x, group.source.y, PARKED_Z, 0.0)
            actors.append(parked.actor((0, 0, 0)))
        reads.append(self.client.spawn_async(actors))
        names = [a.name for a in group.actors] + (["human"] if group.viewpoint is not None else [])
        colors = self.client.object_colors_async(names)  # clutter too: the scene graph (one request)
        key = group.key

        def keep_colors() -> None:
            self._colors.pop(key, None)  # a group shown again is the newest (least recently used goes)
            self._colors[key] = colors()
            while len(self._colors) > self.colors_kept:
                del self._colors[next(iter(self._colors))]

        reads.append(keep_colors)
        self._scene_key = group.key
        return reads

    def colors_of(self, group: Group) -> dict[str, tuple[int, int, int]]:
        """The server's instance colours of ``group``'s actors (read when it was shown).

        Kept for the ``colors_kept`` groups shown last (least recently shown goes first): enough
        for a group shown for a sample queued ahead to outlast every scene the samples before it
        can still try. Before 2026-11-27 the cache kept 4 groups by first insertion, so a sample
        whose group had been shown before the next samples' groups were queued ahead lost its
        colours and ``generate`` stopped with a ``KeyError`` (desert ego at 5,000,
        ``--camera-policy balanced --min-bbox-px 24``: many candidates per sample)."""
        if group.key not in self._colors:
            self.settle()
        return self._colors[group.key]

    def set_look(self, world: dict) -> None:
        """Send the sample's world (sun, sky, fog, exposure...) when it differs from the server's;
        it changes ``lit`` only, so the spawned scene stays."""
        sent = server_world(world)
        if sent != self._sent_look:
            self.client.set_world(sent)
            self._sent_look = sent

    def place_human(self, human) -> None:
        self.client.set_pose("human", human.location, (0.0, human.yaw, 0.0))

    def settle(self) -> None:
        """Read the replies queued for later samples (the wire keeps them for their readers): at
        the end of a shard, so no reply is left unread when the connection closes."""
        self.early.settle()

    def _token(self, unit: Unit, i: int, attempt: int, vetoes: int) -> str:
        """Names one search of sample ``i`` on the server (``render_if_visible``'s ``unless_passed``):
        a candidate queued behind one that passed is skipped."""
        return f"{self._session_id}/{unit.env}/{unit.task}/{unit.triple_id}/{i}/{attempt}/{vetoes}"

    def request_view(
        self,
        unit: Unit,
        i: int,
        view,
        st: Setting,
        look: dict | None = None,
        group: Group | None = None,
        token: str | None = None,
    ):
        """Queue everything sample ``i``'s candidate ``view`` needs, read by one call of the returned
        function: its look (``look``, default the current sample's; it changes ``lit`` only), the
        allo figure's pose, and the pixel counts of its labelled objects with, when they pass the
        visibility rule, its images (``/sceneforge/render_if_visible``: the server renders an
        accepted view straight away; ``st``: the sample's rules). ``group``: first make the server
        hold that scene group (:meth:`_scene_requests`); ``token``: see :meth:`_token`. Returns
        ``() -> (counts, images or None)``, ``(None, None)`` when skipped; it has ``discard()``."""
        acks = [] if group is None else self._scene_requests(unit, group)
        sent = server_world(self._look if look is None else look)
        if sent != self._sent_look:
            acks.append(self.client.set_world_async(sent))
            self._sent_look = sent
        names = ["source", "target"]
        if view.human is not None:
            acks.append(
                self.client.set_poses_async({"human": {"location": view.human.location, "rotation": (0.0, view.human.yaw, 0.0)}})
            )
            names.append("human")
        result = self.client.render_if_visible_async(
            0,
            names,
            self.render_kinds(unit, i),
            min_visible_ratio=st.min_visible_ratio,
            min_bbox_px=st.min_bbox_px,
            camera=view.camera,
            unless_passed=token,
        )

        def read():
            for ack in acks:
                ack()
            return result()

        read.discard = lambda: [getattr(r, "discard", r)() for r in acks + [result]]  # type: ignore[attr-defined]
        return read

    def perceptual(self, unit: Unit) -> bool:
        """Does the perceptual-consistency rule (scenarios/sampling/consistency.py) judge this unit's samples?"""
        return unit.task == "ego" and getattr(self.env(unit.env).sampling, "perceptual_check", True)

    def _veto_needs_depth(self, unit: Unit, i: int) -> bool:
        """The image-space bearing (camera_policy decorrelated) reads depth for every label; the
        older rule only for front/back."""
        return self.cfg.camera_policy == "decorrelated" or needs_depth(unit.label(i))

    def render_kinds(self, unit: Unit, i: int) -> tuple[str, ...]:
        """What sample ``i``'s render returns: ``lit``, the mask (and for front/back the depth)
        when the config asks or the perceptual-consistency rule needs them (they do not change
        the lit image)."""
        cfg, perceptual = self.cfg, self.perceptual(unit)
        return (
            ("lit",)
            + (("object_mask",) if cfg.masks or perceptual else ())
            + (("depth",) if cfg.depth or (perceptual and self._veto_needs_depth(unit, i)) else ())
        )

    def render_sample(self, unit: Unit, i: int, view):
        """Send the render of sample ``i``'s accepted ``view`` with its look; returns a function
        that waits for the images (only for a server that counted but did not render it)."""
        self.set_look(self._look)
        return self.client.render_async(0, self.render_kinds(unit, i), camera=view.camera)
