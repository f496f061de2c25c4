"""Validates EMF documents against the specification: emf_schema.json for the structure, plus the
rules JSON Schema cannot express (every directive's dimensions and metrics are root members of the
right type)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA = json.loads((Path(__file__).with_name("emf_schema.json")).read_text())
Draft202012Validator.check_schema(SCHEMA)
VALIDATOR = Draft202012Validator(SCHEMA)
# The specification limits an EMF document like any CloudWatch Logs event.
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_DIMENSION_VALUE_CHARS = 1024
MAX_VALUES_PER_METRIC = 100


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def emf_problems(document: dict[str, Any]) -> list[str]:
    problems = [f"{'/'.join(map(str, error.path))}: {error.message}" for error in VALIDATOR.iter_errors(document)]
    if problems:
        return problems
    if len(json.dumps(document).encode()) > MAX_DOCUMENT_BYTES:
        problems.append("document larger than a CloudWatch Logs event")
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            for key in dimension_set:
                value = document.get(key)
                if not isinstance(value, str) or not value or len(value) > MAX_DIMENSION_VALUE_CHARS:
                    problems.append(f"dimension {key!r} must be a root member with a 1-1024 character string")
        for metric in directive["Metrics"]:
            value = document.get(metric["Name"])
            values = value if isinstance(value, list) else [value]
            if not values or len(values) > MAX_VALUES_PER_METRIC or not all(_is_number(v) for v in values):
                problems.append(f"metric {metric['Name']!r} must be a root member holding a number or numbers")
    return problems
