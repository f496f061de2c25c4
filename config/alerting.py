"""Which environments must page someone (config checks). The topics' and the budget's stack outputs are
named in config.naming with the others."""

from __future__ import annotations

# Environments whose alarms must page someone, besides any `production: true` one; dev may page nobody.
PAGED_ENVIRONMENTS = ("prod", "staging")
