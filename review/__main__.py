"""`python -m review` (review/cli.py); Ctrl-C, while it loads or works, is one line and exit 130."""

import sys

try:
    from review.cli import main

    sys.exit(main())
except KeyboardInterrupt:  # the synths it started are stopped by then (review/cli.py `_synthesise`)
    print("review: interrupted; nothing was written", file=sys.stderr)
    sys.exit(130)
