"""The inbox's pure rules: parse received mail and classify it (bounce, complaint, auto-reply, ...)."""
