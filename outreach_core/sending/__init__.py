"""The sender: scheduling, the send ledger, the message and SMTP outcomes (docs/sending.md)."""
