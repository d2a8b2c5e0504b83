"""The warmup pool (issue 32 item 1, docs/warmup.md): mailboxes with warmup on exchange natural emails
with the other mailboxes of the server, which find them, take them out of spam, mark them read and
important, and answer some; the share that lands in the inbox is the mailbox's warmup score."""
