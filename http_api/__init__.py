"""The REST door: Starlette routes under /api/v1 built from the core catalogue."""
