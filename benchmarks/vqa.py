"""Template-VQA generation time per image (``sceneforge vqa``), per environment.

Run: ``python benchmarks/vqa.py [--env city desert] [--n 3] [--seed 0]``
(or ``sceneforge bench vqa --n 3``).

Measures, in the same run, on one render server and the same scenes (indices 1..n of each
environment; index 0 first, untimed: environment load, mesh uploads, shader compiles):

1. **baseline**: the pipeline as it was before issue 33 item 3 — every candidate view's graph
   carries all ordered-pair relations, one pure-Python ``scene_graph.relation`` call per pair
   (a city view has ~68 objects = ~4,600 pairs, and most views are rejected);
2. **current**: ``scenarios.vqa.scenario.Maker`` as shipped — views are judged on the objects'
   nodes only, and the relations (``scene_graph.relations``, pair tables) are computed once, for
   the view that is written;

and prints seconds per image (wall, client + server), the ratio to the baseline, views tried per
image, graph/relations time per image, whether both wrote byte-identical files (they must: the
change is a pure speed-up), and the target: **<= 2 s per city image** on 2 cores, so the
documented ``sceneforge vqa --env desert city --n 50`` takes minutes, not hours. Images are run
alternately (baseline i, current i) so load from other processes hits both; timings on a shared
machine are noisy, compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_S_PER_CITY_IMAGE = 2.0


class Timed:
    """Mixin for ``scenario.Maker``: counts views, times graph building and writing (``stats``)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.stats: Counter = Counter()

    def graph(self, env_name, objs, cam, vis):
        t = time.perf_counter()
        g = self.relate(super().graph(env_name, objs, cam, vis), objs, cam)
        self.stats["views"] += 1
        self.stats["graph_s"] += time.perf_counter() - t
        return g

    def relate(self, graph, objs, cam):
        return graph

    def write(self, *a):
        t = time.perf_counter()
        out = super().write(*a)
        self.stats["write_s"] += time.perf_counter() - t
        return out


class RelationsProbe:
    """Stands in for ``scenario.with_relations`` during a run: times the current maker's pair
    tables; for the baseline it passes the graph through (it already holds every pair)."""

    def __init__(self, real):
        self.real, self.baseline, self.seconds = real, False, []

    def __call__(self, graph, objs, cam):
        if self.baseline:
            return graph
        t = time.perf_counter()
        out = self.real(graph, objs, cam)
        self.seconds.append(time.perf_counter() - t)
        return out


def makers(cfg, client, tmp: Path):
    """(baseline, current) makers on one client, writing to their own folders."""
    from sceneforge.scenarios.output.scene_graph import relation
    from sceneforge.scenarios.vqa.scenario import Maker

    class Baseline(Timed, Maker):
        """Every view's graph with all pairs, one ``relation`` call each (the old ``scene_graph``)."""

        def relate(self, graph, objs, cam):
            graph["relations"] = [relation(a, b, cam) for a in objs for b in objs if a is not b]
            return graph

    class Current(Timed, Maker):
        pass

    return Baseline(cfg, client, tmp / "baseline"), Current(cfg, client, tmp / "current")


def bench_env(env: str, n: int, seed: int, tmp: Path) -> dict:
    """Images 1..n of ``env`` by both makers, alternately, on one server (image 0: warm-up)."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server
    from sceneforge.renderfarm.auto import inline_threads
    from sceneforge.scenarios.vqa import scenario

    cfg = scenario.parse_config({"envs": [env], "n": n + 1, "seed": seed})
    spec = scenario.server_spec(cfg.to_dict())
    times: dict[str, list[float]] = {"baseline": [], "current": []}
    probe = scenario.with_relations = RelationsProbe(scenario.with_relations)
    try:
        with (
            start_server(
                assets=list(spec.assets), licenses=spec.licenses, renderer=spec.renderer, threads=inline_threads()
            ) as srv,
            RenderClient(srv.address) as client,
        ):
            base, cur = makers(cfg, client, tmp / env)
            cur.make(env, 0)
            cur.stats.clear()
            probe.seconds.clear()
            for i in range(1, n + 1):
                for name, maker in (("baseline", base), ("current", cur)):
                    probe.baseline = maker is base
                    t = time.perf_counter()
                    maker.make(env, i)
                    times[name].append(time.perf_counter() - t)
    finally:
        scenario.with_relations = probe.real
    files = [f for i in range(1, n + 1) for f in scenario.file_names(cfg, env, i).values()]
    files += [str(scenario.scene_path(Path(), env, i)) for i in range(1, n + 1)]
    same = all((base.out / f).read_bytes() == (cur.out / f).read_bytes() for f in files)
    return {"times": times, "base": base.stats, "cur": cur.stats, "relations_s": probe.seconds, "same": same, "n": n}


def report(env: str, r: dict) -> None:
    n = r["n"]
    base, cur = (sum(r["times"][k]) / n for k in ("baseline", "current"))
    b, c = r["base"], r["cur"]
    print(f"{env}: {n} images (after 1 untimed warm-up), {c['views'] / n:.1f} views tried per image")
    print(
        f"  baseline  all pairs per view, relation() per pair: {base:7.2f} s/image "
        f"(graphs {b['graph_s'] / n:.2f} s, write {b['write_s'] / n:.2f} s)"
    )
    rel = sum(r["relations_s"]) / max(len(r["relations_s"]), 1)
    print(
        f"  current   nodes per view, pair tables once       : {cur:7.2f} s/image "
        f"(graphs {c['graph_s'] / n:.2f} s, relations {rel:.3f} s, write {c['write_s'] / n:.2f} s)  "
        f"{base / cur:.1f}x faster"
    )
    print(f"  files     baseline vs current: {'byte-identical' if r['same'] else 'DIFFER'}")
    print(f"  projected --n 50: baseline {50 * base / 60:.1f} min, current {50 * cur / 60:.1f} min")
    if env == "city":
        verdict = "meets" if cur <= TARGET_S_PER_CITY_IMAGE else "misses"
        print(
            f"  target    <= {TARGET_S_PER_CITY_IMAGE:.1f} s per city image: {verdict} "
            f"({cur / TARGET_S_PER_CITY_IMAGE:.2f}x the budget)"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", nargs="+", default=["city", "desert"])
    p.add_argument("--n", type=int, default=3, help="timed images per environment (after one warm-up)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-vqa-") as tmp:
        for env in args.env:
            r = bench_env(env, args.n, args.seed, Path(tmp))
            report(env, r)
            ok &= r["same"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
