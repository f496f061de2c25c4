"""`python -m planner`: the planner's commands (planner/cli.py); Ctrl-C while they load is one line and exit
130, as during a command (planner/interrupt.py)."""

from planner import interrupt

try:
    from planner.cli import app

    app(prog_name="planner")
except KeyboardInterrupt:
    interrupt.stop()
