"""What the lead domains share, below all of them: statuses, ids, the lead filter and target and the counts
actions answer with (`schemas`), selecting leads in SQL (`selection`), address normalisation and the
derived search columns (`rules`).

The lead peers (leads, lists, labels, suppressions, enrichment, verification) never import one another
(an import-linter contract). When one needs what another owns, that piece lives here, named for what it
does, and the owner uses it too: putting leads on a list (`list_members`), the suppression list's checks
(`suppression`), label triggers that point at a list (`label_triggers`), the mail-domain cache
(`mail_domains`, `esp`), an import's last steps (`import_progress`) and holding the workspace its leads
belong to while writing them (`lead_owner`). See docs/architecture.md.
"""
