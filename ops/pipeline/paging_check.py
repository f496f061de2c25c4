"""`python -m ops.pipeline.paging_check ENV`: `make deploy`'s first step, before any AWS call. A production
environment whose paging destination is a placeholder is refused (exit 2); others get a warning.
"""

from __future__ import annotations

import argparse
import sys

from config import environment_label
from config.alerting import placeholders
from ops.pipeline.environment_arg import USAGE, environment_or_say_why, hook_or_say_why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.pipeline.paging_check", description=__doc__.splitlines()[0])
    parser.add_argument("env")
    args = parser.parse_args(argv)
    cfg = environment_or_say_why(args.env)
    hook = cfg and hook_or_say_why()
    if cfg is None or hook is None:
        return USAGE
    if (skipped := hook.paging_skipped(cfg.name)) is not None:
        print(f"paging: {skipped}")
        return 0
    found = placeholders(cfg.alarms.paging)
    if not found:
        return 0
    where = f"{'; '.join(found)} in {environment_label(cfg.name)}"
    if not cfg.production:
        print(f"warning: {cfg.name} pages a placeholder that reaches nobody: {where}", file=sys.stderr)
        return 0
    print(
        f"error: refusing to deploy production environment {cfg.name}: its paging destination is a placeholder "
        f"that reaches nobody ({where}); put the on-call address, PagerDuty/Opsgenie URL or topic there first "
        '(docs/reference/alarms.md "Two destinations")',
        file=sys.stderr,
    )
    return USAGE


if __name__ == "__main__":
    sys.exit(main())
