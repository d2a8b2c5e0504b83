"""Prometheus metrics of one process (self-hosting kit, issue 30): `GET /metrics`.

- `outreach_http_requests_total{method,route,status}` and the histogram
  `outreach_http_request_duration_seconds{method,route}`: every HTTP request, by route template
  (`/api/v1/leads/{lead_id}`, never the ids themselves; `unmatched` for a path no route took, so stray
  URLs cannot grow the series without bound);
- `outreach_worker_ticks_total`, `outreach_worker_failures_total`, `outreach_worker_items_total` and
  `outreach_worker_lag_seconds` (since the last successful tick ended; 0 inside a tick) by `worker`;
- `outreach_sends_total{outcome}`: emails the sender handed off, by outcome;
- `outreach_queue_depth{queue}`: `imports`, `outbox`, `webhooks` (read from the database at each scrape,
  each counted up to `db/health.py:QUEUE_DEPTH_CAP`);
- `outreach_worker_process_up{child}` and `outreach_worker_process_restarts_total{child}` (`outreach serve`
  only; `child` is `import` or `others`): 1 while the worker process reports in time, 0 while it is dead,
  hung or starting again; how many times the server started it again after it died;
- the `process_*` figures of prometheus-client.

Each process serves its own (`outreach serve` includes the workers of the worker processes it started; each
`outreach worker --port N` its own). Recording a request costs a few microseconds
(bench/metrics_overhead.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Any other method is counted as `OTHER` (a client's invented methods must not add series; one that
uvicorn's HTTP parser, httptools, does not know is answered 400 before it reaches the app)."""


class _Snapshot(Collector):
    """The figures read at scrape time (workers, sends, queues), handed over by `Metrics.render`."""

    def __init__(self) -> None:
        self.workers: list[dict[str, Any]] = []
        self.sends: dict[str, int] = {}
        self.queues: dict[str, int] = {}
        self.processes: list[tuple[str, bool, int]] = []
        self.now = 0.0

    def collect(self) -> Iterable[Metric]:
        ticks = CounterMetricFamily(
            "outreach_worker_ticks", "Worker ticks run, failed ones included.", labels=["worker"]
        )
        failures = CounterMetricFamily(
            "outreach_worker_failures", "Worker ticks that raised.", labels=["worker"]
        )
        items = CounterMetricFamily("outreach_worker_items", "Items worker ticks handled.", labels=["worker"])
        lag = GaugeMetricFamily(
            "outreach_worker_lag_seconds",
            "Seconds since the worker's last successful tick ended (0 while a tick runs).",
            labels=["worker"],
        )
        for beat in self.workers:
            name = str(beat["name"])
            ticks.add_metric([name], beat["ticks"])
            failures.add_metric([name], beat["failures"])
            items.add_metric([name], beat["items"])
            since = beat.get("last_ok_at") or beat["started_at"]
            lag.add_metric([name], 0.0 if beat.get("tick_started_at") else max(0.0, self.now - since))
        sends = CounterMetricFamily(
            "outreach_sends", "Emails handed off by the sender, by outcome.", labels=["outcome"]
        )
        for outcome, count in sorted(self.sends.items()):
            sends.add_metric([outcome], count)
        queues = GaugeMetricFamily(
            "outreach_queue_depth", "Work waiting, by queue (counted up to 10,000).", labels=["queue"]
        )
        for queue, depth in sorted(self.queues.items()):
            queues.add_metric([queue], depth)
        yield from (ticks, failures, items, lag, sends, queues)
        if self.processes:
            up = GaugeMetricFamily(
                "outreach_worker_process_up",
                "1 while the worker process reports in time, 0 while it is dead, hung or starting.",
                labels=["child"],
            )
            restarts = CounterMetricFamily(
                "outreach_worker_process_restarts",
                "Times the server started the worker process again after it died (as the child reports).",
                labels=["child"],
            )
            for child, running, started_again in self.processes:
                up.add_metric([child], 1.0 if running else 0.0)
                restarts.add_metric([child], started_again)
            yield from (up, restarts)


class Metrics:
    """One process's registry and the request metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter(
            "outreach_http_requests",
            "HTTP requests answered, by route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "outreach_http_request_duration_seconds",
            "Time from a request's arrival to the end of its response, by route template.",
            ["method", "route"],
            registry=self.registry,
        )
        self._snapshot = _Snapshot()
        self.registry.register(self._snapshot)
        ProcessCollector(registry=self.registry)
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(method, route, str(status)), self.latency.labels(method, route))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def render(
        self,
        workers: list[dict[str, Any]],
        sends: dict[str, int],
        queues: dict[str, int],
        processes: list[tuple[str, bool, int]] | None = None,
    ) -> bytes:
        """The Prometheus text of everything, with these scrape-time figures; `processes`: the worker
        processes `outreach serve` started, as (child, up, restarts)."""
        snap = self._snapshot
        snap.workers, snap.sends, snap.queues, snap.now = workers, sends, queues, time.time()
        snap.processes = list(processes or [])
        return generate_latest(self.registry)


def route_template(scope: Scope, root_path: str) -> str:
    """The template of the route that answered (`/api/v1/leads/{lead_id}`), or `unmatched`."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if route is None or path is None or isinstance(route, Mount):
        return UNMATCHED
    prefix = str(scope.get("root_path", ""))[len(root_path) :]
    return prefix + str(path)


class RequestMetrics:
    """ASGI middleware recording each HTTP request's route template, status and duration."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        root_path = scope.get("root_path", "")
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            self.metrics.observe(
                method, route_template(scope, root_path), status, time.perf_counter() - started
            )


def iter_lines(text: bytes) -> Iterator[str]:
    """The sample lines of a Prometheus text (tests and the bench)."""
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            yield line
