"""How many requests a minute one instance serves within the latency objective: a library importing nothing
from `ops`, and on top of it the command that drives it (`bin/loadtest`, `python -m workbench.loadtest`),
which runs on the ops CLI's runtime (the workbench may import the product; tests/test_architecture.py).

The entry is measurement.measure; each module's docstring opens with its part (the command: cli,
endpoint_target; the step: load, conversation_step; the search: sweep; the record: report, record).
"""

from workbench.loadtest.measurement import Measurement, MeasureSettings, SettingsError, measure

__all__ = ["MeasureSettings", "Measurement", "SettingsError", "measure"]
