"""`GET /healthz`, `GET /readyz` and `GET /metrics` (DESIGN section 10, "Operations"), without API auth.

- `/healthz`: 200 `{"status": "ok"}` while the process answers at all (a liveness probe);
- `/readyz`: 200 `{"status": "ready"}` when the database answers within `DB_TIMEOUT_S`, its migrations are
  at head and every worker of this process (and of the worker process `outreach serve` started) ticked
  within three of its intervals (`workers/health.py`); otherwise 503
  `{"status": "not_ready", "reasons": ["...", ...]}`;
- `/metrics`: the Prometheus text of this process (`metrics.py`); with `OUTREACH_METRICS_TOKEN` set, only
  with `Authorization: Bearer <token>` (401 `unauthorized` otherwise).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from outreach_app.ops.metrics import Metrics
from outreach_app.ops.status_file import ChildStatus, read_status
from outreach_core.kernel.db.health import migration_problem, queue_depths
from outreach_core.kernel.errors import Unauthorized
from workers.health import BEATS, sends_by_outcome, worker_problems

DB_TIMEOUT_S = 3.0
"""How long readiness and the queue depths wait for the database."""

_log = structlog.get_logger("outreach.ops")


@dataclass
class Ops:
    """What the operations routes look at in this process."""

    engine: AsyncEngine
    metrics: Metrics
    metrics_token: str | None = None
    child_status_files: list[Path] = field(default_factory=list)
    """Status files of worker processes this process started (`outreach serve`)."""

    def workers(self) -> tuple[list[dict[str, Any]], dict[str, int], list[str], list[ChildStatus]]:
        """Worker records and send counts of this process and its worker processes, what is missing, and
        the worker processes' own statuses."""
        records = BEATS.snapshot()
        sends = sends_by_outcome()
        problems = []
        children = [read_status(path) for path in self.child_status_files]
        for child in children:
            records += child.workers
            for outcome, count in child.sends.items():
                sends[outcome] = sends.get(outcome, 0) + count
            if child.problem:
                problems.append(child.problem)
        return records, sends, problems, children


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]


def ops_routes(ops: Ops) -> list[Route]:
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        reasons: list[str] = []
        try:
            problem = await asyncio.wait_for(migration_problem(ops.engine), DB_TIMEOUT_S)
        except TimeoutError:
            reasons.append(f"database: no answer within {DB_TIMEOUT_S:g} s")
        except Exception as exc:
            reasons.append(f"database: {_one_line(exc)}")
        else:
            if problem:
                reasons.append(problem)
        records, _sends, missing, _children = ops.workers()
        reasons += missing
        reasons += worker_problems(records, time.time())
        if reasons:
            _log.warning("not_ready", reasons=reasons)
            return JSONResponse({"status": "not_ready", "reasons": reasons}, status_code=503)
        return JSONResponse({"status": "ready", "workers": sorted(str(r["name"]) for r in records)})

    async def metrics_text(request: Request) -> Response:
        if ops.metrics_token:
            given = request.headers.get("authorization", "")
            expected = f"Bearer {ops.metrics_token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                err = Unauthorized("GET /metrics needs Authorization: Bearer <OUTREACH_METRICS_TOKEN>")
                return JSONResponse(
                    err.to_body(), status_code=err.status, headers={"WWW-Authenticate": "Bearer"}
                )
        try:
            queues = await asyncio.wait_for(queue_depths(ops.engine), DB_TIMEOUT_S)
        except Exception as exc:  # the other figures are still worth having
            _log.warning("metrics_queue_depths_failed", error=_one_line(exc))
            queues = {}
        records, sends, _, children = ops.workers()
        processes = [(c.child, c.up, c.restarts) for c in children]
        return Response(ops.metrics.render(records, sends, queues, processes), media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_text, methods=["GET"]),
    ]
