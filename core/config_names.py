"""One name per thing: the old spellings of config keys and CLI flags, in one table.

Every config loader renames old keys with :func:`rename_keys` before it validates, and the CLI
gives every flag of :data:`RENAMED_FLAGS` its old spelling (``sceneforge.commands.common.
add_old_spellings``), so an old name keeps working and says once, in one line naming the file
and the key, what to write instead.

    >>> rename_keys({"size": 448, "n": 2}, "vqa", "q.yaml")    # logs: q.yaml: 'size' is deprecated ...
    {'image_size': 448, 'n': 2}

The concepts and their names:

- ``image_size``: the square output image's side in pixels, in :data:`IMAGE_SIZE` (checked by
  :func:`check_image_size`; videos also need it even, for H.264 yuv420p).
- ``min_bbox_px``: the shortest accepted longest edge of an object's visible box, in pixels at
  ``image_size`` (the visibility rule of ``core/visibility.py``).
- ``quiet``: no progress bars (``--quiet``).
"""

from __future__ import annotations

import logging
from typing import Mapping

from sceneforge.core.errors import ConfigError

log = logging.getLogger(__name__)

# config scope -> {old key: new key}; a scope is one config class (a scenario's NAME, "probe", ...)
RENAMED: dict[str, dict[str, str]] = {
    "sparrta": {"size": "image_size"},
    "vqa": {"size": "image_size", "min_box_px": "min_bbox_px"},
    "videos": {"size": "image_size"},
    "probe": {"no_progress": "quiet"},
    # probing.sweep.ProbeJob's keywords -> probing.config.ProbeConfig's fields (progress, train: see ProbeJob)
    "ProbeJob": {"model_kwargs": "model_arg", "protocols": "protocol", "cache_dir": "cache", "batch_size": "extract_batch"},
}

# config scope -> {field: the name its recorded config keeps}: OUT/job.json (and the fingerprint, the
# job's identity) of a scenario whose field was renamed keeps the name its datasets were made with,
# so they stay byte-identical and resume; reading a recorded config maps it back silently
RECORDED_AS: dict[str, dict[str, str]] = {
    "vqa": {"image_size": "size", "min_bbox_px": "min_box_px"},
}

# old CLI flag -> new flag (same meaning, same values); the old one is hidden from --help
RENAMED_FLAGS: dict[str, str] = {
    "--no-progress": "--quiet",
    "--min-box-px": "--min-bbox-px",
}

IMAGE_SIZE = (16, 4096)  # pixels, every scenario and environment (sampling.image_size)
VIDEO_MAX_IMAGE_SIZE = 2048  # videos: frames are encoded as H.264 (even sides, <= 2048 here)


def deprecation_line(where: str, old: str, new: str) -> str:
    """The one wording of every deprecation line."""
    return f"{where}: {old!r} is deprecated, write {new!r} (the old name still works for now)"


def rename_keys(raw: Mapping, scope: str, source: str) -> dict:
    """``raw`` with the old keys of ``scope`` renamed (``-`` and ``_`` alike), one warning per old key.

    Giving both the old and the new name is a :class:`ConfigError` naming both (which one would
    win is not obvious). Keys not in the table pass through unchanged, order kept.
    """
    table = RENAMED.get(scope, {})
    out: dict = {}
    for key, value in raw.items():
        new = table.get(str(key).replace("-", "_"))
        if new is None:
            out[key] = value
            continue
        if new in raw or new.replace("_", "-") in raw:
            raise ConfigError(f"{source}: give {new} only ({key} is its old name)")
        log.warning(deprecation_line(source, str(key), new))
        out[new] = value
    return out


def as_recorded(config: Mapping, scope: str) -> dict:
    """A config's ``to_dict`` under the names its recorded configs use (:data:`RECORDED_AS`), order kept."""
    table = RECORDED_AS.get(scope, {})
    return {table.get(k, k): v for k, v in config.items()}


def from_recorded(scope: str) -> dict[str, str]:
    """``{recorded name: field}`` of ``scope``: the silent renames that read a recorded config back."""
    return {old: new for new, old in RECORDED_AS.get(scope, {}).items()}


def check_image_size(value, where: str, *, video: bool = False) -> int:
    """``image_size`` as an int in :data:`IMAGE_SIZE` (even and <= 2048 for ``video``), else a
    :class:`ConfigError` naming ``where`` and the value."""
    lo, hi = IMAGE_SIZE[0], VIDEO_MAX_IMAGE_SIZE if video else IMAGE_SIZE[1]
    ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    if not ok or (video and value % 2):
        rule = f"an even integer in {lo}..{hi} (H.264 yuv420p)" if video else f"an integer in {lo}..{hi}"
        raise ConfigError(f"{where}: image_size must be {rule} pixels, got {value!r}")
    return value
