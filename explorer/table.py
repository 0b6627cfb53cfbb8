"""The explorer's view of a dataset: one row per sample, a few facets, a few numbers, details.

The page filters and counts on the *index* (facets as small integer codes, numbers as floats:
a 50,000-row index is a few hundred kB of script), and reads a sample's *details* (params, boxes,
top-down geometry, questions) only when it shows that sample, from a shard of ``SHARD_SIZE`` rows.
Everything here is plain data, so a benchmark can build a synthetic :class:`Table` without files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class Table:
    """What :func:`explorer.site.write_site` needs, whatever kind of dataset it came from.

    ``keys`` name thumbnails (``thumbs/<key>.jpg``), stable across rebuilds of a grown dataset;
    ``media`` are paths relative to the dataset directory (``image``, ``mask``, ``depth`` and for
    videos ``videos``: {variant: path}); ``facets`` are categorical columns (filters with counts),
    ``numbers`` numeric ones (range filters and histograms), ``details(i)`` the sample page's data.
    """

    kind: str  # "sparrta" | "vqa" | "videos"
    keys: list[int]
    media: list[dict[str, Any]]
    facets: dict[str, list[str]]
    numbers: dict[str, np.ndarray]
    details: Callable[[int], dict[str, Any]]
    stats: dict[str, Any] = field(default_factory=dict)  # dataset-level plots (rejection reasons)
    units: dict[str, str] = field(default_factory=dict)  # numbers' units, shown in labels

    def __len__(self) -> int:
        return len(self.keys)


def encode_facet(values: list[str]) -> tuple[list[str], list[int]]:
    """Values → (sorted vocabulary, codes): the index stores small integers, not repeated strings."""
    vocab = sorted({str(v) for v in values})
    pos = {v: i for i, v in enumerate(vocab)}
    return vocab, [pos[str(v)] for v in values]
