"""Deliverability: the domain checker (`GET /check`) and a workspace's sending domains
(docs/deliverability.md).

Below sending, inbox, mailboxes and campaigns in the layers: they read its grades and badges; it reads no
domain above it. `records` and `rules` are pure (no I/O): parsing DNS records and grading them.
"""
