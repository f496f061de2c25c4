"""`ops capacity`: how many requests a minute one instance serves within the latency objective.

workload  what is sent: MangaAssist-shaped chat streams (workload.yaml) or captured traffic (capture)
targets   where it goes: a serving container's URL, or one variant through the SageMaker runtime
load      one step: open-loop Poisson arrivals at a fixed rate, every request timed from its schedule
sweep     rising steps until the objective breaks, then refined to within 10 %
report    capacity.json, capacity.md and capacity.png
record    the measurement written into the environment's config (planning.capacity)
cli       the command, registered in the ops CLI
"""
