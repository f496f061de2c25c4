"""The ops command line: the typer app and its Runtime (common.py), the commands (cli.py, which
registers every one, and a module each for the larger ones), their options and arguments, what they
print and the exit codes they set. The work is ops.operations'; nothing there imports this package."""
