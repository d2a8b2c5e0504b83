"""Every worker the service knows, by name (the names `outreach worker --only ...` accepts)."""

from __future__ import annotations

from collections.abc import Callable

from workers import (
    billing,
    campaigns,
    domains,
    enrich,
    imports,
    label_timers,
    link_domains,
    oauth_purge,
    search_index,
    sending_ips,
    usage_flush,
    verify,
)
from workers.loop import Worker

__all__ = ["ALL_WORKERS", "WorkerFactory", "select"]

WorkerFactory = Callable[[], Worker]


def _usage() -> Worker:
    # The tick takes every pending value at once: re-running it straight away would write once per request.
    # The final tick saves what was recorded since the last flush when the process stops.
    return Worker(
        "usage", usage_flush.tick, interval_s=5.0, max_backoff_s=60.0, sleep_after_work=True, final_tick=True
    )


def _oauth_purge() -> Worker:
    return Worker(
        "oauth-purge", oauth_purge.tick, interval_s=3600.0, max_backoff_s=3600.0, sleep_after_work=True
    )


def _import() -> Worker:
    # A tick that merged rows runs again at once (a queued import drains part after part); idle, new chunks
    # are picked up within half a second.
    # Stopping waits for the planner statistics refresh a tick may have left running (PostgreSQL).
    return Worker("import", imports.tick, interval_s=0.5, max_backoff_s=60.0, on_stop=imports.stop)


def _enrich() -> Worker:
    # A tick that enriched a batch runs again at once (a large import drains quickly); idle polls every 2 s.
    # Waiting for an import stored by another process, it polls every quarter second and wakes
    # `search-index` and `verify` when the queue is drained (`after_storing`).
    return Worker("enrich", imports.after_storing(enrich.tick), interval_s=2.0, max_backoff_s=60.0)


def _search_index() -> Worker:
    # Drains a large import in 2,000-lead transactions back to back; idle polls every 2 s.
    return Worker("search-index", search_index.tick, interval_s=2.0, max_backoff_s=60.0)


def _label_timers() -> Worker:
    # Due timers are checked every 30 s; a tick that ran some runs again at once until none are due.
    return Worker("label-timers", label_timers.tick, interval_s=30.0, max_backoff_s=300.0)


def _verify() -> Worker:
    # A tick that verified a batch runs again at once (a large queue drains quickly); idle polls every 2 s.
    return Worker("verify", verify.tick, interval_s=2.0, max_backoff_s=60.0)


def _campaigns() -> Worker:
    # endOn is a date: checking once a minute pauses a campaign within a minute of its last day ending.
    return Worker("campaigns", campaigns.tick, interval_s=60.0, max_backoff_s=600.0, sleep_after_work=True)


def _billing() -> Worker:
    # Periods are computed when read (a period ends exactly at renewsAt); this only writes them down, so a
    # minute is soon enough. A pass that changed rows runs again at once.
    return Worker("billing", billing.tick, interval_s=60.0, max_backoff_s=600.0)


def _sending_ips() -> Worker:
    # Mailboxes waiting for a sending IP get one within a minute of one having room (`outreach ip add`
    # routes them at once itself).
    return Worker(
        "sending-ips", sending_ips.tick, interval_s=60.0, max_backoff_s=600.0, sleep_after_work=True
    )


def _domains() -> Worker:
    # Deliverability (issue 27): due sending domains are looked for every minute (new ones are due at once);
    # a tick that checked a batch runs again at once.
    return Worker("domains", domains.tick, interval_s=60.0, max_backoff_s=600.0)


def _link_domains() -> Worker:
    # Each link domain carries its own next check (every minute for its first hour, then hourly); due ones
    # are looked for every 15 s. A pass that checked some runs again at once.
    return Worker("link-domains", link_domains.tick, interval_s=15.0, max_backoff_s=300.0)


def _sender() -> Worker:
    # Imported when chosen: the sender pulls in the campaign renderer, which other workers do not need.
    from workers import sender

    # A tick that sent or changed something runs again at once; idle, the due mailboxes are checked every
    # second (a mailbox's own gap decides when it sends next).
    return Worker("sender", sender.tick, interval_s=1.0, max_backoff_s=60.0)


def _webhooks() -> Worker:
    from workers import webhooks

    # A tick that recorded, fanned out or claimed something (or has POSTs in flight, which it waits for
    # itself) runs again at once; idle, new events are looked for every quarter second. Stopping waits for
    # the POSTs in flight and records them.
    return Worker(
        "webhooks", webhooks.tick, interval_s=webhooks.POLL_S, max_backoff_s=30.0, on_stop=webhooks.stop
    )


def _inbox() -> Worker:
    from workers import inbox

    # The tick only renews leases and starts or stops the per-mailbox tasks (IDLE or poll, docs/inbox.md);
    # stopping ends the tasks and gives the leases back.
    return Worker("inbox", inbox.tick, interval_s=inbox.TICK_S, max_backoff_s=30.0, on_stop=inbox.stop)


def _warmup() -> Worker:
    from workers import warmup

    # Warmup pool (docs/warmup.md): a pass that sent or found something runs again at once; idle, every 5 s.
    return Worker("warmup", warmup.tick, interval_s=5.0, max_backoff_s=300.0)


ALL_WORKERS: dict[str, WorkerFactory] = {
    "usage": _usage,
    "oauth-purge": _oauth_purge,
    "import": _import,
    "enrich": _enrich,
    "search-index": _search_index,
    "label-timers": _label_timers,
    "verify": _verify,
    "campaigns": _campaigns,
    "billing": _billing,
    "sending-ips": _sending_ips,
    "domains": _domains,
    "link-domains": _link_domains,
    "sender": _sender,
    "webhooks": _webhooks,
    "inbox": _inbox,
    "warmup": _warmup,
}
"""Worker name -> factory building a fresh `Worker`, in the order they are started."""


def select(only: list[str] | None) -> list[Worker]:
    """Build the workers named in `only` (all of them when `only` is None or empty), each once.

    Names are stripped and blank ones ignored, so `"sender, inbox".split(",")` works. Raises ValueError
    naming the known workers when a name is unknown.
    """
    names = [n.strip() for n in only or [] if n.strip()]
    if not names:
        return [factory() for factory in ALL_WORKERS.values()]
    unknown = [n for n in names if n not in ALL_WORKERS]
    if unknown:
        raise ValueError(
            f"unknown worker{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}; "
            f"known workers: {', '.join(ALL_WORKERS)}"
        )
    return [ALL_WORKERS[n]() for n in dict.fromkeys(names)]
