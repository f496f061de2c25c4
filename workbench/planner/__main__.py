"""`python -m workbench.planner`: the planner's commands (workbench/planner/cli.py); Ctrl-C while they load is one line and exit
130, as during a command (workbench/planner/interrupt.py)."""

from workbench.planner import interrupt

try:
    from workbench.planner.cli import app

    app(prog_name="planner")
except KeyboardInterrupt:
    interrupt.stop()
