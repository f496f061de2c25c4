import sys

from review.cli import main

sys.exit(main())
