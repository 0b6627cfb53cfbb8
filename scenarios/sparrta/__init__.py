"""SpaRRTa-style egocentric / allocentric relation images: the ``sparrta`` scenario.

Modules: :mod:`.config` (the config, its fingerprint, index → sample mapping), :mod:`.scene`
(placement groups and views), :mod:`.scenario` (plan/run/finalize and the per-worker session),
:mod:`.record` (params and table rows), :mod:`.card` (table, splits, dataset card),
:mod:`.preview` (contact sheets), :mod:`.layout` (the on-disk layouts), :mod:`.graph`
(per-sample scene graphs). The runner is :func:`sceneforge.renderfarm.run_job` (inline, local
workers or Ray).
"""

from sceneforge.scenarios.sparrta.config import SparrtaConfig as Config  # noqa: F401 (light: the command line's flags)

NAME = "sparrta"

# The scenario contract and its helpers, loaded on first use (PEP 562): importing one submodule
# (e.g. the config, which the command line's flags are built from) does not load the scenario.
_EXPORTS = (
    "NEEDS_SERVER",
    "Session",
    "finalize",
    "plan",
    "run",
    "server_spec",
    "setting_for",
    "units_of",
    "wds_samples",
)


def __getattr__(name: str):
    if name in _EXPORTS:
        # PEP 562: the CLI parser imports only the config, the scenario on first use
        from sceneforge.scenarios.sparrta import scenario

        return getattr(scenario, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
