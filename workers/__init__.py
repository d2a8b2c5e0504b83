"""Background workers: each module exposes `async def tick(runtime) -> int`, run by `workers.loop`.

`workers.registry` lists them by name; `workers.loop.run_workers` runs a selection until asked to stop.
Workers change state only through core operations, inside `runtime.system(...)` transactions.
"""
