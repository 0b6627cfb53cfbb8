"""Per-server state that only the UnrealCV compatibility commands need.

Kept apart from :class:`~engine.server.state.ServerState`'s scene so the renderer never sees it:
camera settings the plugin exposes (exposure, lens, projection...), object labels, the view mode,
pause/input flags, and the previous frame of each camera (optical flow is the motion between two
consecutive image requests of one camera, as UE's velocity buffer is between two frames).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sceneforge.engine.world import Camera, Transform


@dataclass
class CameraSettings:
    """What ``vset /camera/[id]/<setting>`` stores. Only ``exposure_bias`` (EV, applied to the
    lit image as a linear gain of 2**EV) and ``lit_source`` ``normal`` change pixels: the
    embedded renderer has no auto exposure, depth of field, motion blur, GI or reflections."""

    exposure_bias: float = 0.0
    exposure_method: str = "histogram"
    auto_speed: tuple[float, float] = (3.0, 1.0)
    auto_brightness: tuple[float, float] = (0.03, 2.0)
    physical_exposure: int = 0
    focal: tuple[float, float] = (0.0, 0.0)
    motion_blur: tuple[float, float, float, int] = (0.0, 0.0, 0.0, 0)
    lit_source: str = "ftc_hdr"
    reflection: str = "none"
    illumination: str = "none"
    projection_type: str = "perspective"
    ortho_width: float = 512.0


@dataclass(frozen=True)
class FrameSnapshot:
    """The camera and actor poses of a camera's last image request (optical flow's t-1)."""

    camera: Camera
    transforms: dict[str, Transform]
    assets: dict[str, str] = field(default_factory=dict)  # each actor's asset id then (a character's pose)


@dataclass
class UnrealcvState:
    cameras: dict[int, CameraSettings] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    viewmode: str = "lit"
    paused: bool = False
    input_enabled: bool = True
    level: str | None = None
    previous_frame: dict[int, FrameSnapshot] = field(default_factory=dict)

    def camera(self, cam_id: int) -> CameraSettings:
        return self.cameras.setdefault(cam_id, CameraSettings())
