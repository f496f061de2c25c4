"""The ops command line: the typer app and Runtime (common.py), the commands (cli.py and a module each for
the larger ones). The work is ops.operations'.
"""
