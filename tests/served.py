"""A second real server on loopback for tests that need other settings than the session's (small limits):
the whole app on a free port, sharing the session's database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from outreach_app.asgi import build_app
from outreach_core.kernel.runtime import Runtime
from tests.conftest import free_port


@asynccontextmanager
async def served(runtime: Runtime, **settings: Any) -> AsyncIterator[str]:
    """`async with served(runtime, rate_limit_burst=5) as base_url:` the app with those settings changed."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    changed = runtime.settings.model_copy(update={"public_url": base, **settings})
    app = build_app(Runtime(changed, engine=runtime.engine, ports=runtime.ports), flush_usage=False)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on", access_log=False)
    )
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(500):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        else:
            raise RuntimeError("uvicorn did not start")
        yield base
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)
