"""License tags: family matching for ``--licenses cc0,cc-by`` and attribution lines.

Tags are lower-case SPDX-like strings (``cc0-1.0``, ``cc-by-3.0``, ``cc-by-3.0-us``,
``cc-by-sa-3.0``). A filter token matches a tag equal to it or the same family with a version:
``cc-by`` matches ``cc-by-3.0`` and ``cc-by-3.0-us`` but not ``cc-by-sa-3.0``.
"""

from __future__ import annotations

SHARE_ALIKE = ("cc-by-sa",)


def family_matches(license_tag: str, token: str) -> bool:
    tag, token = license_tag.lower().strip(), token.lower().strip()
    if tag == token:
        return True
    if not tag.startswith(token + "-"):
        return False
    rest = tag[len(token) + 1 :]
    return rest[:1].isdigit()


def matches_any(license_tag: str, tokens) -> bool:
    if isinstance(tokens, str):
        tokens = [t for t in tokens.split(",") if t.strip()]
    return any(family_matches(license_tag, t) for t in tokens)


def is_share_alike(license_tag: str) -> bool:
    return any(family_matches(license_tag, t) for t in SHARE_ALIKE)


def attribution_line(info) -> str:
    """``"<attribution> (<source>), license <tag>"`` — what a dataset card lists per credit."""
    who = info.attribution or info.source or info.id
    src = f" ({info.source})" if info.source and info.source not in who else ""
    return f"{who}{src}, license {info.license}"
