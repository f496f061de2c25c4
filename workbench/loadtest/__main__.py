"""`python -m workbench.loadtest` (what bin/loadtest runs): the load test's command line (workbench/loadtest/cli.py)."""

from workbench.loadtest.cli import app

app(prog_name="loadtest")
