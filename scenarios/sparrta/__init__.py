"""SpaRRTa-style egocentric / allocentric relation images: the ``sparrta`` scenario.

Modules: :mod:`.config` (the config, its fingerprint, index → sample mapping), :mod:`.scene`
(placement groups and views), :mod:`.scenario` (plan/run/finalize and the per-worker session),
:mod:`.record` (params and table rows), :mod:`.card` (table, splits, dataset card),
:mod:`.preview` (contact sheets), :mod:`.layout` (the on-disk layouts), :mod:`.graph`
(per-sample scene graphs). The runner is :func:`sceneforge.renderfarm.run_job` (inline, local
workers or Ray).
"""
from sceneforge.scenarios.sparrta.scenario import (  # noqa: F401  (the scenario contract and its helpers)
    NAME, NEEDS_SERVER, Config, Session, finalize, plan, run, server_spec, setting_for, units_of, wds_samples,
)
