"""Events: the outbox every domain records its events in (`outbox`) and the payloads they carry (`data`).
Above the kernel, below every domain (docs/architecture.md)."""
