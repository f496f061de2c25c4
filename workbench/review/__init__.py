"""`make review BASE=<rev>`: an offline review of a change (no AWS credentials, no Docker)."""
