"""Background workers: each module exposes `async def tick(runtime) -> int`, run by `workers.loop`.

`workers.registry` lists them by name; `workers.loop.run_workers` runs a selection until asked to stop.
Workers change state only through core operations, inside `runtime.system(...)` transactions.
"""

WORKER_NAMES = (
    "usage",
    "oauth-purge",
    "import",
    "enrich",
    "search-index",
    "label-timers",
    "verify",
    "campaigns",
    "billing",
    "sending-ips",
    "domains",
    "link-domains",
    "sender",
    "webhooks",
    "inbox",
    "warmup",
)
"""The names of `workers.registry.ALL_WORKERS`, in its order, without importing the workers (the CLI's
`--help` lists them; tests/ops/test_cli_conventions.py keeps the two equal)."""
