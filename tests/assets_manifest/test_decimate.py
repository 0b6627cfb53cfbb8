"""Vertex clustering, the decimation's fallback where quadric collapses stall (assets_manifest/decimate.py)."""

from __future__ import annotations

import numpy as np
import trimesh

from sceneforge.assets_manifest import decimate as dec


def _ball(subdivisions: int = 4):
    m = trimesh.creation.icosphere(subdivisions=subdivisions, radius=100.0)
    return np.asarray(m.vertices), np.asarray(m.faces)


def test_clustering_reaches_the_target_keeps_the_shape_and_makes_no_degenerate_faces():
    v, f = _ball()  # 5120 faces
    for target in (2000, 300, 40):
        nv, nf = dec.cluster_simplify(v, f, target)
        assert 0.3 * target <= len(nf) <= target, (target, len(nf))
        assert (nf[:, 0] != nf[:, 1]).all() and (nf[:, 1] != nf[:, 2]).all() and (nf[:, 0] != nf[:, 2]).all()
        assert len(np.unique(np.sort(nf, axis=1), axis=0)) == len(nf)  # no face twice
        assert nf.max() == len(nv) - 1 and len(np.unique(nf)) == len(nv)  # every vertex used
        # cell means lie inside the source's box, and the ball stays a ball of about its size
        assert (nv.min(axis=0) >= v.min(axis=0) - 1e-9).all() and (nv.max(axis=0) <= v.max(axis=0) + 1e-9).all()
        assert (nv.max(axis=0) - nv.min(axis=0) > 0.8 * 200).all()
        r = np.linalg.norm(nv, axis=1)
        assert np.median(r) > 80, target


def test_clustering_is_deterministic_and_leaves_small_meshes_alone():
    v, f = _ball(3)
    a, b = dec.cluster_simplify(v, f, 200), dec.cluster_simplify(v.copy(), f.copy(), 200)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    same_v, same_f = dec.cluster_simplify(v, f, len(f))
    assert same_f is not None and len(same_f) == len(f) and np.array_equal(same_v, v)


def test_a_part_the_quadric_queue_reduces_is_not_clustered():
    """Clustering is a fallback: where fast-simplification reaches the budget its result is kept
    (it keeps shape better), so assets whose levels were fine are unchanged."""
    import fast_simplification

    v, f = _ball()
    want = len(f) // 8
    nv, nf = dec._simplify_part(v, f, want)
    qv, qf = fast_simplification.simplify(v.astype(np.float32), f.astype(np.int32), target_reduction=1.0 - want / len(f))
    assert np.array_equal(nf, qf) and np.allclose(nv, qv)
