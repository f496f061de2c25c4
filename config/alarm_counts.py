"""How many rollback alarms the serving stack gives a blue/green update, for the construct that makes
them (constructs/serving_alarms.py asserts it) and the config rule that bounds the variants by them.

Plain numbers, no CDK: anything under `constructs.` starts the jsii runtime (Node) when imported, and
loading a config must not.
"""

from __future__ import annotations

MAX_ROLLBACK_ALARMS = 10  # AutoRollbackConfiguration accepts 1-10 alarms
ROLLBACK_ALARMS_PER_VARIANT = 4  # 5XX rate, time to first token p95, engine silent, broken release
