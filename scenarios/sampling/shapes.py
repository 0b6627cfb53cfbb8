"""Asset shapes for samplers, computed once per process: the kit's :class:`ShapeCache` (footprint
hull + height per asset id, a class's variants drawn with the environment's style tags) over a
:class:`CachedLibrary`. Every scenario that places assets draws them from here (sparrta, vqa,
distance, and plugins such as examples/sceneforge-height).
"""

from __future__ import annotations

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.sampling.rejection import AssetShape
from sceneforge.scenarios.sampling.silhouette import drawable_points


class CachedLibrary:
    """An asset library whose footprints (a convex hull each), sizes (a min/max over every
    vertex), id lists and class variants are computed once: environments ask for footprints and
    variants on every clutter placement, the scene graph for the size of every actor of every
    sample. Everything else is forwarded. (A library does not change once loaded.)"""

    def __init__(self, lib):
        self._lib = lib
        self._footprints: dict[str, np.ndarray] = {}
        self._sizes: dict[str, tuple[float, float, float]] = {}

    def footprint(self, asset_id: str) -> np.ndarray:
        if asset_id not in self._footprints:
            self._footprints[asset_id] = self._lib.footprint(asset_id)
        return self._footprints[asset_id]

    def size_cm(self, asset_id: str) -> tuple[float, float, float]:
        if asset_id not in self._sizes:
            self._sizes[asset_id] = tuple(self._lib.size_cm(asset_id))
        return self._sizes[asset_id]

    # clutter placement asks these for every object it places (``placement.pick_variants``);
    # each sorted every asset of the library (~10 % of a city scene's placement time)
    def ids(self) -> list[str]:
        return list(self._memo("ids", self._lib.ids))

    def classes(self) -> list[str]:
        return list(self._memo("classes", self._lib.classes))

    def by_class(self, cls: str) -> list:
        return list(self._memo(("by_class", cls), lambda: self._lib.by_class(cls)))

    def _memo(self, key, make):
        memo = self.__dict__.setdefault("_memos", {})
        if key not in memo:
            memo[key] = tuple(make())
        return memo[key]

    def __getattr__(self, name: str):
        return getattr(self._lib, name)


class ShapeCache:
    """AssetShape per asset id (footprint hull + height), computed once per process.

    ``variants(cls) -> ids`` chooses the asset ids a class may draw from; pass the environment's
    ``env.variants`` so its style tags apply (snowy trees in Winter Town). Default: every active
    variant of the library.
    """

    def __init__(self, lib, variants=None):
        self.lib = lib if isinstance(lib, CachedLibrary) else CachedLibrary(lib)
        self._variants = variants or (lambda cls: [a.id for a in self.lib.by_class(cls)])
        self._shapes: dict[str, AssetShape] = {}

    def __call__(self, asset_id: str) -> AssetShape:
        if asset_id not in self._shapes:
            size = self.lib.size_cm(asset_id)
            self._shapes[asset_id] = AssetShape(
                asset_id,
                self.lib.info(asset_id).cls,
                np.asarray(self.lib.footprint(asset_id), float),
                float(size[2]),
                silhouette=lambda: drawable_points(self.lib, asset_id),
            )
        return self._shapes[asset_id]

    def pick(self, rng: np.random.Generator, cls: str) -> AssetShape:
        variants = self._variants(cls)
        if not variants:
            raise ConfigError(f"no asset of class {cls!r} in the asset library")
        return self(variants[int(rng.integers(len(variants)))])
