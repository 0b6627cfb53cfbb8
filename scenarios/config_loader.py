"""One config loader for every command: a YAML file of config fields, overridden by flags.

Every scenario's config is a dataclass with ``from_dict(raw, source)``; this module only merges
the layers and names where a bad value came from. Nested fields are written with dots on the
command-line side (``{"motion.n_frames": 8}`` sets ``motion: {n_frames: 8}``).

    >>> merged = merge_config({"n": 40, "motion": {"fps": 8}}, {"n": 8, "motion.n_frames": 16})
    >>> merged == {"n": 8, "motion": {"fps": 8, "n_frames": 16}}
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from sceneforge.core.config_names import rename_keys
from sceneforge.core.errors import ConfigError

T = TypeVar("T")


def read_config_file(path: str | Path) -> dict:
    """A YAML mapping of config fields; unreadable/invalid files are one ConfigError naming them."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--config {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"--config {path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"--config {path}{where}: bad YAML: {getattr(e, 'problem', None) or e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a mapping of config fields, got {type(data).__name__}")
    return data


def merge_config(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict:
    """``base`` with every non-None override applied (dotted keys reach into nested mappings)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key, value in overrides.items():
        if value is None:
            continue
        parts = key.split(".")
        node = out
        for p in parts[:-1]:
            child = node.get(p)
            if child is None:
                child = node[p] = {}
            elif not isinstance(child, dict):
                raise ConfigError(f"{'.'.join(parts[:-1])}: expected a mapping to set {key}, got {child!r}")
            node = child
        node[parts[-1]] = value
    return out


def load_config(
    from_dict: Callable[[dict, str], T],
    *,
    command: str,
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[T, dict]:
    """Validate ``--config`` file + flag overrides with the scenario's ``from_dict``.

    Returns the validated config object and the merged plain dict (what runners pass to
    workers). Errors name the file when there is one (``c.yaml: unknown field(s) nn``), else the
    command (``sceneforge generate: n must be ...``; the flag names the field). Old key names in
    the file (``core/config_names.RENAMED`` of the config's ``SCENARIO``) are renamed with one
    deprecation line naming the file, before the flags (already new names) are applied.
    """
    base = read_config_file(config_file) if config_file else {}
    if base:
        scope = getattr(getattr(from_dict, "__self__", None), "SCENARIO", None)
        base = rename_keys(base, scope, f"--config {config_file}") if scope else base
    merged = merge_config(base, dict(overrides or {}))
    source = str(config_file) if config_file else "command line"
    return from_dict(merged, source), merged
