"""Pure rules of the workspace settings."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones


def known_time_zone(name: str) -> str:
    """`name` when it is an IANA time zone this server knows (refused otherwise: 422 `invalid_input`)."""
    if name not in _names():
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin or UTC")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None
    return name


_KNOWN: set[str] = set()


def _names() -> set[str]:
    if not _KNOWN:
        _KNOWN.update(available_timezones(), {"UTC"})
    return _KNOWN
