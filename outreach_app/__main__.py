"""`python -m outreach_app`: the `outreach` command."""

from outreach_app.cli import main

main()
