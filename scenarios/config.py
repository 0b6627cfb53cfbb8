"""The base of every scenario's config: :class:`ScenarioConfig`, on core's config base.

The generic machinery (:func:`option` fields with ``choices``/``bounds``/``integer``, one-line
errors naming the source, the field and the value, ``from_dict``/``to_dict``/``fingerprint``)
is ``sceneforge.core.config_base`` (probing's ``ProbeConfig`` is built on it too); this module
adds what a scenario's config has besides: its ``SCENARIO`` name, which default error sources
(``vqa config: ...``) and the old-key table (``core/config_names.RENAMED``) are looked up by::

    @dataclass(frozen=True)
    class Config(ScenarioConfig):
        SCENARIO = "distance"
        n: int = option(8, bounds=(1, 100_000), integer=True, help="scenes")
        image_format: str = option("jpg", choices=("jpg", "png"), flag="--format", help="image format")

        def check(self, source):           # optional: rules between fields
            self.need(self.n % 2 == 0, "n", "must be even", self.n, source)

``to_dict()`` is what ``OUT/job.json`` records; ``fingerprint()`` its hash, what resume compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sceneforge.core.config_base import (  # noqa: F401  (re-exported: the scenarios' one import)
    ConfigBase,
    cli_fields,
    comma_list,
    is_number,
    is_tuple_field,
    option,
)


@dataclass(frozen=True)
class ScenarioConfig(ConfigBase):
    """Base of every scenario's config (see the module docstring)."""

    SCENARIO: ClassVar[str] = "scenario"  # the scenario's name: error sources, config_names scope

    @classmethod
    def default_source(cls) -> str:
        return f"{cls.SCENARIO} config"

    def memo(self, key, make):
        """``make()`` once per config object, e.g. an environment rebuilt from the recorded
        content: a config is parsed once per process (scenarios.contract.Scenario), so what it
        derives is built once too, whichever step asks. Not a field: neither the identity nor
        ``to_dict`` sees it (``replace`` starts a new one)."""
        store = self.__dict__.setdefault("_memo", {})
        if key not in store:
            store[key] = make()
        return store[key]
