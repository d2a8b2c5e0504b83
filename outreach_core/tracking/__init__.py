"""Click and open tracking (docs/tracking.md).

- `base.py`: `tracking_base_url`, the one choice of the base URL of every link in an email (tracking and
  unsubscribe);
- `tokens.py`: the signed `/l/<token>` and `/o/<token>` links;
- `rewrite.py`: an email's links rewritten and its pixel added (pure);
- `rules.py`: which hits are people's and which are flagged (scanners, prefetchers, privacy proxies; pure);
- `journal.py`: each hit appended to a local file before its request is answered, replayed after a crash;
- `recorder.py`: the in-memory queue that commits hits in batches;
- `record.py`: one batch of hits written to the database (`record_hits`).
"""
