"""How many requests a minute one instance serves within the latency objective: a library importing nothing
from `ops`, and on top of it the command that drives it (`bin/loadtest`, `python -m workbench.loadtest`),
which runs on the ops CLI's runtime (the workbench may import the product; tests/test_architecture.py).

cli               the command: options, refusals, the answer as exit codes
endpoint_target   a deployed variant as the target (account, endpoint InService, instances, data capture),
                  and --write-config

measurement       the entry: measure(target, workload, settings) -> Measurement, the report written
conversations     what is sent by default: sessions whose turns carry the history so far (workload.yaml's
                  `conversation:`), and load_workload, the choice among the kinds
workload          what is sent one request at a time: single MangaAssist-shaped chat streams (workload.yaml),
                  or captured traffic (capture)
targets           where it goes: a serving container's URL, or one variant through the SageMaker runtime
load              one step: open-loop Poisson arrivals at a fixed rate, every request timed from its schedule;
                  the figures and judgment every step shares
conversation_step one step of conversations: sessions arriving open-loop, a turn a think time after the last answer
sweep             rising steps until the objective breaks, then refined to within 10 %
report            capacity.json, capacity.md and capacity.png
record            the measurement written into the environment's config (planning.capacity)
"""

from workbench.loadtest.measurement import Measurement, MeasureSettings, SettingsError, measure

__all__ = ["MeasureSettings", "Measurement", "SettingsError", "measure"]
