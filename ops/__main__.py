from ops.commands.cli import app

app(prog_name="ops")
