"""Webhook endpoints and the signed, at-least-once delivery of outbox events (docs/webhooks.md)."""
