from planner.cli import app

app(prog_name="planner")
