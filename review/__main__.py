import sys

from review.cli import main

try:
    sys.exit(main())
except KeyboardInterrupt:  # the synths it started were in its process group: Ctrl-C ended them too
    print("review: interrupted; nothing was written", file=sys.stderr)
    sys.exit(130)
