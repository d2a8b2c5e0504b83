"""Operating the service (self-hosting kit, issue 30): `/healthz`, `/readyz`, `/metrics`, the status a
worker process started by `outreach serve` reports to it, and the generated `.env.example`."""
