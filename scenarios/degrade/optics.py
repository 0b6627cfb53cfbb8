"""Optical and dynamic degradations that need the scene's depth: defocus, motion blur, lens
distortion. Pure numpy/OpenCV; depth is the dataset's *ray* depth in cm (``inf`` = sky).

Pinhole model as :class:`engine.world.Camera`: square pixels, focal length
``f_px = (W/2) / tan(fov/2)``, principal point at the image centre, pixel ``(u, v)``'s centre at
``(u + 0.5, v + 0.5)``; camera frame (forward, right, up) in cm.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from sceneforge.scenarios.degrade.color import to_linear, to_srgb8

FAR_CM = 1.0e7  # what "infinitely far" (sky, inf depth) becomes in formulas that need a number


def focal_px(width: int, fov_deg: float) -> float:
    return (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


def clean_depth(depth: np.ndarray) -> np.ndarray:
    """Ray depth with inf / nan / non-positive (nothing hit) replaced by :data:`FAR_CM`."""
    d = np.asarray(depth, dtype=np.float64)
    return np.where(np.isfinite(d) & (d > 0), np.minimum(d, FAR_CM), FAR_CM)


def camera_points(depth: np.ndarray, fov_deg: float) -> np.ndarray:
    """(H, W, 3) camera-frame points (forward, right, up) in cm from ray depth."""
    h, w = depth.shape
    f = focal_px(w, fov_deg)
    u, v = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    ray = np.stack([np.full_like(u, f), u - w / 2.0, -(v - h / 2.0)], axis=-1)
    ray /= np.linalg.norm(ray, axis=-1, keepdims=True)
    return ray * clean_depth(depth)[..., None]


# --- defocus ---------------------------------------------------------------------------------
def circle_of_confusion_px(depth: np.ndarray, focus_cm: float, aperture_cm: float, f_px: float) -> np.ndarray:
    """Thin-lens blur-circle diameter in pixels: ``c = A · f_px · |1/s − 1/d|``.

    From the thin-lens CoC ``c = A f |d − s| / (d (s − f))`` with ``s ≫ f`` and the sensor-plane
    diameter divided by the pixel pitch (``f / pitch = f_px``). Depth is measured along the ray,
    a good approximation of the axial distance within a 60° field. Exactly 0 where ``d = s``.
    """
    d = clean_depth(depth)
    return aperture_cm * f_px * np.abs(1.0 / focus_cm - 1.0 / d)


def _disk(diameter: float) -> np.ndarray:
    """Normalised disk kernel of the given diameter (pixels): each tap is the disk's coverage of
    that pixel (8×8 supersampled), so sub-pixel circles of confusion still blur a little."""
    r = diameter / 2.0
    n = int(math.ceil(r + 0.5)) * 2 + 1
    sub = (np.arange(8) + 0.5) / 8 - 0.5
    y, x = np.mgrid[:n, :n] - n // 2
    yy = y[..., None, None] + sub[:, None]
    xx = x[..., None, None] + sub[None, :]
    k = (np.hypot(xx, yy) <= max(r, 1e-6)).mean(axis=(-1, -2)).astype(np.float32)
    return k / k.sum()


def defocus(
    img: np.ndarray, depth: np.ndarray, fov_deg: float, focus_cm: float, aperture_cm: float, step_px: float = 0.5
) -> np.ndarray:
    """Depth-dependent defocus in linear light: each pixel takes the image blurred with a disk
    of its own circle of confusion (layers every ``step_px``, linear between neighbouring
    layers). A pixel whose CoC is 0 (at the focus distance) keeps its value exactly.

    Gathering (rather than scattering) lets sharp foreground edges stay sharp over a blurred
    background; the converse leak is the usual layered-defocus approximation.
    """
    lin = to_linear(img)
    coc = circle_of_confusion_px(depth, focus_cm, aperture_cm, focal_px(img.shape[1], fov_deg))
    top = float(coc.max())
    n_layers = int(math.ceil(top / step_px)) + 1
    out = np.zeros_like(lin)
    pos = coc / step_px
    lo = np.floor(pos).astype(int)
    frac = (pos - lo).astype(np.float32)[..., None]
    for k in range(n_layers + 1):
        sel_lo, sel_hi = lo == k, lo == k - 1
        if not (sel_lo.any() or sel_hi.any()):
            continue
        layer = lin if k == 0 else cv2.filter2D(lin, -1, _disk(k * step_px), borderType=cv2.BORDER_REFLECT)
        out += np.where(sel_lo[..., None], layer * (1 - frac), 0) + np.where(sel_hi[..., None], layer * frac, 0)
    out = np.where((coc == 0)[..., None], lin, out)
    return to_srgb8(out)


# --- motion blur -----------------------------------------------------------------------------
def _yaw_pitch(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """Rotation (columns = new forward, right, up in the old camera frame)."""
    y, p = math.radians(yaw_deg), math.radians(pitch_deg)
    ry = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    rp = np.array([[math.cos(p), 0, -math.sin(p)], [0, 1, 0], [math.sin(p), 0, math.cos(p)]])
    return ry @ rp


def motion_flow(
    depth: np.ndarray, fov_deg: float, translation_cm, yaw_deg: float, pitch_deg: float, tau: float
) -> tuple[np.ndarray, np.ndarray]:
    """Where each pixel's surface point appears when the camera has moved by ``tau`` × the
    exposure's motion (``translation_cm`` in the camera frame (forward, right, up), plus yaw and
    pitch). Returns remap coordinates ``(map_x, map_y)`` (pixel-centre convention)."""
    h, w = depth.shape
    f = focal_px(w, fov_deg)
    p = camera_points(depth, fov_deg) - tau * np.asarray(translation_cm, dtype=np.float64)
    p = p @ _yaw_pitch(tau * yaw_deg, tau * pitch_deg)  # coordinates in the moved camera's axes
    fwd = np.maximum(p[..., 0], 1e-3)
    mx = w / 2.0 + f * p[..., 1] / fwd - 0.5
    my = h / 2.0 - f * p[..., 2] / fwd - 0.5
    return mx.astype(np.float32), my.astype(np.float32)


def motion_blur(
    img: np.ndarray,
    depth: np.ndarray,
    fov_deg: float,
    translation_cm,
    yaw_deg: float,
    pitch_deg: float = 0.0,
    subframes: int = 15,
) -> np.ndarray:
    """Average of ``subframes`` views over the exposure window (τ ∈ [−½, ½]), in linear light.

    Each sub-frame is the clean image re-projected through the scene's depth into the camera
    moved by τ·motion (a depth-based warp: near surfaces streak more under translation, every
    surface the same under rotation). The inverse warp samples the clean image at where a pixel's
    own surface point moves, i.e. the flow is evaluated at the target pixel — exact for rotation,
    first-order for translation; disocclusions are not filled with hidden surfaces.
    """
    lin = to_linear(img)
    acc = np.zeros_like(lin)
    taus = np.linspace(-0.5, 0.5, subframes)
    for tau in taus:
        mx, my = motion_flow(depth, fov_deg, translation_cm, yaw_deg, pitch_deg, -tau)
        acc += cv2.remap(lin, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return to_srgb8(acc / len(taus))


# --- lens distortion (Brown–Conrady) -----------------------------------------------------------
def distort_normalized(x: np.ndarray, y: np.ndarray, k1: float, k2: float, p1: float, p2: float):
    """Brown–Conrady forward model on normalised coordinates (undistorted → distorted)."""
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 * r2
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return xd, yd


def undistort_normalized(xd: np.ndarray, yd: np.ndarray, k1: float, k2: float, p1: float, p2: float, iterations: int = 30):
    """Inverse of :func:`distort_normalized` by fixed-point iteration (as OpenCV's undistortPoints)."""
    x, y = xd.copy(), yd.copy()
    for _ in range(iterations):
        r2 = x * x + y * y
        radial = 1 + k1 * r2 + k2 * r2 * r2
        dx = 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
        dy = p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
        x, y = (xd - dx) / radial, (yd - dy) / radial
    return x, y


def undistort_radius(rd: np.ndarray, k1: float, k2: float, iterations: int = 12) -> np.ndarray:
    """Solve ``r (1 + k1 r² + k2 r⁴) = rd`` for r by Newton's method (monotone on [0, 1] for
    the coefficients :class:`LensDistortion` accepts)."""
    r = np.asarray(rd, dtype=np.float64).copy()
    for _ in range(iterations):
        r2 = r * r
        g = r * (1 + k1 * r2 + k2 * r2 * r2) - rd
        dg = 1 + 3 * k1 * r2 + 5 * k2 * r2 * r2
        r = r - g / dg
    return r


class LensDistortion:
    """Radial Brown–Conrady distortion (k1, k2; barrel for k < 0) of a ``width × height`` image.

    Coordinates are normalised by the half-diagonal ``R`` (r = 1 at the clean image's corner) and
    the distorted image is scaled by ``1 / g(1)`` (``g(r) = 1 + k1 r² + k2 r⁴``) so that its
    corners show the clean image's corners: like a wide-angle lens whose sensor sits inside the
    image circle, nothing outside the rendered frame is needed and no border turns black. The
    radial map must stay monotone on [0, 1] (``1 + 3 k1 + 5 k2 > 0``). One instance warps the
    image (bilinear, linear light), the mask (nearest, so instance colours survive) and
    points/boxes with the same map."""

    def __init__(self, width: int, height: int, k1: float, k2: float = 0.0):
        if not 1 + 3 * k1 + 5 * k2 > 0:
            raise ValueError(f"distortion k1={k1}, k2={k2} folds the image (1 + 3 k1 + 5 k2 <= 0)")
        self.w, self.h, self.k = width, height, (k1, k2)
        self.radius = math.hypot(width, height) / 2.0
        self.g1 = 1 + k1 + k2
        u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
        dx, dy = (u - width / 2) / self.radius * self.g1, (v - height / 2) / self.radius * self.g1
        rd = np.hypot(dx, dy)
        ru = undistort_radius(rd, k1, k2)
        scale = np.where(rd > 0, ru / np.maximum(rd, 1e-12), 1.0)
        self.map_x = (dx * scale * self.radius + width / 2 - 0.5).astype(np.float32)
        self.map_y = (dy * scale * self.radius + height / 2 - 0.5).astype(np.float32)

    def image(self, img: np.ndarray) -> np.ndarray:
        out = cv2.remap(to_linear(img), self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        return to_srgb8(out)

    def mask(self, mask: np.ndarray) -> np.ndarray:
        return cv2.remap(np.ascontiguousarray(mask), self.map_x, self.map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)

    def points(self, uv: np.ndarray) -> np.ndarray:
        """Forward-map (N, 2) continuous pixel coordinates (top-left corner = (0, 0))."""
        uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
        x, y = (uv[:, 0] - self.w / 2) / self.radius, (uv[:, 1] - self.h / 2) / self.radius
        xd, yd = distort_normalized(x, y, self.k[0], self.k[1], 0.0, 0.0)
        return np.stack([xd / self.g1 * self.radius + self.w / 2, yd / self.g1 * self.radius + self.h / 2], axis=1)

    def box(self, box) -> list[float] | None:
        """Axis-aligned box ``[x0, y0, x1, y1]`` (pixels) enclosing the distorted box outline,
        clipped to the image; None if nothing remains."""
        if box is None:
            return None
        x0, y0, x1, y1 = (float(b) for b in box)
        t = np.linspace(0, 1, 64)
        edge = np.concatenate(
            [
                np.stack([x0 + (x1 - x0) * t, np.full_like(t, y0)], 1),
                np.stack([x0 + (x1 - x0) * t, np.full_like(t, y1)], 1),
                np.stack([np.full_like(t, x0), y0 + (y1 - y0) * t], 1),
                np.stack([np.full_like(t, x1), y0 + (y1 - y0) * t], 1),
            ]
        )
        p = self.points(edge)
        bx0, by0 = max(p[:, 0].min(), 0.0), max(p[:, 1].min(), 0.0)
        bx1, by1 = min(p[:, 0].max(), float(self.w)), min(p[:, 1].max(), float(self.h))
        return [bx0, by0, bx1, by1] if bx1 > bx0 and by1 > by0 else None
