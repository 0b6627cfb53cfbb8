"""What ``pip install -e .`` puts in a user's environment (issue 33, items 2, 10 and 11).

* one OpenCV distribution: ``unrealcv`` requires ``opencv-python``; ``opencv-python-headless``
  beside it would be a second distribution writing the same ``cv2/`` folder;
* no torch in the base install: its dependency closure, read from the installed packages'
  metadata, reaches neither torch nor the libraries that pull it (the probe extra brings them);
* the suite keeps to its own cache (root conftest.py), never the user's.

``.ci/run`` also proves the first two on a fresh venv (``pip check``; ``import torch`` fails
after README command 1).
"""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path


HEAVY = {"torch", "torchvision", "timm", "transformers", "triton", "ray"}


def _name(req: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", req, maxsplit=1)[0].lower().replace("_", "-")


def _base_requirements(dist: str) -> list[str]:
    """``dist``'s requirements that hold without any extra (markers evaluated for this Python)."""
    from packaging.requirements import Requirement

    out = []
    for text in metadata.requires(dist) or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req.name.lower().replace("_", "-"))
    return out


def base_closure(root: str = "sceneforge") -> set[str]:
    """Every distribution the base install of ``root`` needs, transitively (installed ones)."""
    seen, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(_base_requirements(name))
        except metadata.PackageNotFoundError:
            pass  # an optional platform package not installed here: nothing to follow
    return seen


def test_the_base_install_pulls_no_torch():
    closure = base_closure()
    assert "scikit-image" in closure and "unrealcv" in closure  # the walk follows real metadata
    assert not closure & HEAVY, sorted(closure & HEAVY)


def test_scikit_image_is_a_base_dependency():
    """Every procedural animal is sculpted with scikit-image's marching cubes: without it
    ``sceneforge demo`` crashed at its first camel on a fresh machine."""
    assert "scikit-image" in _base_requirements("sceneforge")


def test_one_opencv_distribution():
    owners = sorted(
        {
            d.metadata["Name"]
            for d in metadata.distributions()
            if any(str(f).replace("\\", "/") == "cv2/__init__.py" for f in (d.files or ()))
        }
    )
    assert len(owners) == 1, f"several distributions install cv2/: {owners} (pip uninstall all but opencv-python)"
    assert owners == ["opencv-python"]
    assert "opencv-python" in _base_requirements("unrealcv")  # why that one


def test_the_suite_keeps_to_its_own_cache():
    """Tests neither see what a user's ``sceneforge demo`` fetched into their cache nor write
    the weight builds (~290 MB) into it."""
    from sceneforge.core.paths import cache_root
    from sceneforge.probing.pretrained import weights_dir

    SUITE_CACHE = Path(
        os.environ.get("SCENEFORGE_TEST_CACHE") or Path(__file__).resolve().parents[1] / ".pytest_cache" / "sceneforge"
    )
    user = Path.home() / ".cache" / "sceneforge"
    assert Path(os.environ["SCENEFORGE_CACHE"]) == SUITE_CACHE != user
    assert Path(cache_root()).resolve() == SUITE_CACHE.resolve()
    assert weights_dir().resolve().is_relative_to(SUITE_CACHE.resolve())
    assert os.environ["SCENEFORGE_NO_FETCH"] == "1"
