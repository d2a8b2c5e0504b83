"""The kernel of the core: what every domain stands on (the endpoint catalogue's types, the runtime, contexts
and scoping, errors, wire types, ids, ports, settings, the database, bulk statements, geography, signing,
encryption, URLs, usage and analytics counters). It imports nothing above it (docs/architecture.md)."""
