"""SpaRRTa-style egocentric / allocentric relation images: the ``sparrta`` scenario.

Modules: :mod:`.config` (the config, its fingerprint, index → sample mapping), :mod:`.scene`
(placement groups and views), :mod:`.scenario` (plan/run/finalize and the per-worker session),
:mod:`.record` (params and table rows), :mod:`.card` (table, splits, dataset card),
:mod:`.preview` (contact sheets), :mod:`.layout` (the on-disk layouts), :mod:`.graph`
(per-sample scene graphs). The runner is :func:`sceneforge.renderfarm.run_job` (inline, local
workers or Ray).

The scenario class is :class:`.scenario.Sparrta` (registered by name; ``job.json`` records this
package's path, which :func:`scenarios.contract.get_scenario` resolves to it).
"""
