"""`lastUsedAt` bookkeeping without a database write on every request.

Authentication calls `touch()` (memory only). A background flusher (`flush_usage`) writes the newest
timestamps in one statement per table every few seconds; listings merge unflushed values so callers see
them at once.
"""

from __future__ import annotations

from datetime import datetime


class UsageTracker:
    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], datetime] = {}
        self._seen: dict[tuple[str, str], datetime] = {}

    def touch(self, kind: str, ident: str, when: datetime) -> None:
        key = (kind, ident)
        self._pending[key] = when
        self._seen[key] = when

    def last_used(self, kind: str, ident: str, stored: datetime | None) -> datetime | None:
        seen = self._seen.get((kind, ident))
        if seen is None:
            return stored
        return seen if stored is None or seen > stored else stored

    def take_pending(self) -> dict[tuple[str, str], datetime]:
        pending, self._pending = self._pending, {}
        return pending

    def restore(self, pending: dict[tuple[str, str], datetime]) -> None:
        """Put back values taken by `take_pending` whose write failed, so they are flushed next time.

        A key touched again since it was taken keeps whichever time is newer.
        """
        for key, when in pending.items():
            current = self._pending.get(key)
            if current is None or when > current:
                self._pending[key] = when

    def forget_seen(self) -> None:
        self._seen.clear()
