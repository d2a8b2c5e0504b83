"""The inbox domain: replies, bounces and auto-replies read back from the mailboxes (docs/inbox.md).

`rules/` holds the pure part (parsing and classification, no I/O); the rest of the package records what
the `inbox` worker reads, with its effects, and serves the threads.
"""
