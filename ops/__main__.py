from ops.cli import app

app(prog_name="ops")
