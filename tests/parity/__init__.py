"""REST/MCP parity cases: one module per domain, named like the domain package whose `endpoints.py` lists
the tools (`tests/parity/leads.py` for `outreach_core/leads/endpoints.py`). Each module's `CASES` maps every
tool of its domain to a case: a function that builds fresh data and returns the argument sets to call the
tool with; it runs once for the REST call and once for the MCP call, so the two see equal but separate
data. `tests/test_doors.py` collects them, checks every tool has its case in its domain's module, and
compares the two doors' answers."""
