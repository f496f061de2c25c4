"""One line of `bin/ops preflight`: what, the value found, what is needed, the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    what: str
    found: str
    needed: str
    fix: str
    blocking: bool = True  # False: a warning, printed, that does not fail the preflight

    def line(self) -> str:
        kind = "problem" if self.blocking else "warning"
        return f"{kind}: {self.what}: found {self.found}; needs {self.needed}; fix: {self.fix}"
