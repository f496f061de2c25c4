"""`python -m workbench.review` (workbench/review/cli.py); Ctrl-C, while it loads or works, is one line and exit 130."""

import sys

try:
    from workbench.review.cli import main

    sys.exit(main())
except KeyboardInterrupt:  # the synths it started are stopped by then (workbench/review/cli.py `_synthesise`)
    print("review: interrupted; nothing was written", file=sys.stderr)
    sys.exit(130)
