"""A timm model's checkpoint: the family's key filter, classifier keys dropped, a strict load.

Used by the ``timm:`` backbones (:mod:`probing.timm_backbone`, a ``--weights`` file or a cached
one) and by the functional check of built weights (:mod:`probing.pretrained`). The caller passes
the imported ``timm`` module, so importing this module loads neither timm nor torch.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sceneforge.core.errors import ConfigError


def classifier_names(model) -> tuple[str, ...]:
    classifier = model.pretrained_cfg.get("classifier") or ()
    return (classifier,) if isinstance(classifier, str) else tuple(classifier)


def filtered_state(model, state: dict, what: str) -> dict:
    """``state`` through the model family's ``checkpoint_filter_fn`` (key layout, position-embedding
    resampling), classifier keys dropped (the backbones are built with ``num_classes=0``)."""
    filter_fn = getattr(sys.modules.get(type(model).__module__), "checkpoint_filter_fn", None)
    if filter_fn is not None:
        try:
            state = filter_fn(state, model)
        except Exception as e:  # foreign layout the family filter cannot map
            raise ConfigError(
                f"{what}: does not fit timm:{model.pretrained_cfg.get('architecture')} ({type(e).__name__}: {str(e)[:200]})"
            ) from e
    heads = classifier_names(model)
    return {k: v for k, v in state.items() if not k.startswith(tuple(h + "." for h in heads))}


def load_file(timm, model, path: Path, what: str) -> None:
    """Strict load of a local checkpoint, through the model family's own checkpoint filter.

    Why not ``create_model(pretrained=True, pretrained_cfg_overlay=dict(file=...))``: timm then
    loads non-strictly whenever num_classes differs from the pretrained config (always, with our
    num_classes=0), so a wrong file would only log a warning and leave random weights.
    """
    try:
        state = timm.models.load_state_dict(str(path))
    except Exception as e:
        raise ConfigError(f"{what}: cannot read ({type(e).__name__}: {str(e)[:200]})") from e
    state = filtered_state(model, state, what)
    heads = classifier_names(model)
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as e:  # shape mismatch
        raise ConfigError(
            f"{what}: does not fit timm:{model.pretrained_cfg.get('architecture')} ({str(e).strip().splitlines()[-1][:200]})"
        ) from e
    missing = [k for k in result.missing_keys if not k.startswith(tuple(h + "." for h in heads))]
    if missing or result.unexpected_keys:
        raise ConfigError(
            f"{what}: does not fit timm:{model.pretrained_cfg.get('architecture')} "
            f"(missing {missing[:3]}{'...' if len(missing) > 3 else ''}, "
            f"unexpected {result.unexpected_keys[:3]})"
        )
