"""The model hub, as far as probing ever touches it: is it allowed and reachable, where is its cache,
and the one message for 'no weights here'.

Both backbone kinds (``timm:`` in :mod:`probing.timm_backbone`, ``hf:`` in
:mod:`probing.hf_backbone`) read the local HF cache first and try the hub only when
:func:`hub_usable`; nothing here imports ``huggingface_hub`` or ``torch``.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

from sceneforge.core.errors import ConfigError


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


_REACHABLE: dict[str, bool] = {}


def hub_reachable(timeout_s: float = 2.0) -> bool:
    """Whether the hub's host accepts a TCP connection within ``timeout_s`` (checked once per host).

    Why: with no network, huggingface_hub retries for about a minute before failing; a 2 s
    connect test lets the offline case fail (or fall back) in seconds.
    """
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    if host not in _REACHABLE:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            _REACHABLE[host] = True
        except OSError:
            _REACHABLE[host] = False
    return _REACHABLE[host]


def hub_usable() -> bool:
    """Not declared offline (``HF_HUB_OFFLINE``) and reachable now."""
    return not hub_offline() and hub_reachable()


def hub_cache_dir() -> str:
    """The HF hub cache as the environment says *now* (huggingface_hub reads it only at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return os.path.join(home, "hub")


def offline_error(name: str, err: Exception) -> ConfigError:
    """The one message for 'no weights here' (no model hub is reachable from this tool)."""
    return ConfigError(
        f"offline and no local weights for {name}: pass --weights or set HF_HOME "
        f"({type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''})"
    )
