"""What a variant's instances serve within the objective, each at the capacity of its own type.

With instance pools a variant runs several types at once (DescribeEndpoint `InstancePools[].CurrentInstanceCount`),
and a fallback may be the weaker type (issue 42). Instances still to come count at the weakest figure among the
pools SageMaker is providing from now (it tries priority 1 first); scale-in releases fallbacks first
("realtime-endpoints-heterogeneous"), so a floor of N keeps the first N instances in priority order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from config.schema import InstanceCapacity
from ops.operations.endpoint import LiveVariant


class UnknownCapacity(LookupError):
    pass


@dataclass(frozen=True)
class PoolCapacity:
    in_service: dict[str, int]  # instances per type, priority order
    per_instance: dict[str, float]  # requests/min one instance of each type serves within the objective
    new_type: str  # new instances are sized at this type's figure (see the module's docstring)
    split_known: bool = True  # False: DescribeEndpoint did not say which types are in service

    @classmethod
    def of(cls, live: LiveVariant, capacity: Mapping[str, InstanceCapacity | float]) -> PoolCapacity:
        """`capacity`: planning.capacity or requests per minute by type; UnknownCapacity for a type without one."""
        types = live.instance_types or (live.instance_type,)
        missing = [t for t in types if t not in capacity]
        if missing:
            raise UnknownCapacity(f"planning.capacity has no figure for {', '.join(missing)}")
        per_instance = {t: _rate(capacity[t]) for t in types}
        counts = live.instances_by_type()
        if any(count is None for count in counts.values()):  # not reported: all at the weakest figure
            weakest = min(types, key=lambda t: per_instance[t])
            return cls({weakest: live.current_instance_count or 0}, per_instance, weakest, split_known=False)
        deepest = max((i for i, t in enumerate(types) if counts.get(t)), default=0)
        providing = min(types[: deepest + 1], key=lambda t: per_instance[t])
        return cls({t: n or 0 for t, n in counts.items() if n}, per_instance, providing)

    @property
    def count(self) -> int:
        return sum(self.in_service.values())

    @property
    def mixed(self) -> bool:
        """More than one figure among the instances in service and to come: messages then give the split."""
        used = {self.per_instance[t] for t in self.in_service} | {self.per_instance[self.new_type]}
        return len(used) > 1

    def serves(self) -> float:
        return sum(n * self.per_instance[t] for t, n in self.in_service.items())

    def serves_with(self, count: int) -> float:
        """What `count` instances serve: the first ones in priority order, then new ones at the weakest figure."""
        total, left = 0.0, count
        for instance_type, n in self.in_service.items():
            kept = min(n, left)
            total, left = total + kept * self.per_instance[instance_type], left - kept
        return total + left * self.per_instance[self.new_type]

    def instances_for(self, traffic: float) -> int:
        """The fewest instances that serve `traffic`: in service ones in priority order, then new ones."""
        total, count = 0.0, 0
        for instance_type, n in self.in_service.items():
            for _ in range(n):
                if total >= traffic:
                    return count
                total, count = total + self.per_instance[instance_type], count + 1
        if total >= traffic:
            return count
        return count + math.ceil((traffic - total) / self.per_instance[self.new_type])

    def describe(self, wanted: int) -> str:
        """'3 × ml.g5.xlarge at 274/min, 2 × ml.g6.xlarge at 200/min in service, 1 more at ml.g6.xlarge's …'."""
        parts, left = [], wanted
        for instance_type, n in self.in_service.items():
            kept = min(n, left)
            left -= kept
            if kept:
                parts.append(f"{kept} × {instance_type} at {self.per_instance[instance_type]:,.0f}/min")
        text = ", ".join(parts) + (" in service" if parts else "")
        if left:
            more = f"{left} more at {self.new_type}'s {self.per_instance[self.new_type]:,.0f}/min"
            reason = "the weakest of the pools SageMaker is providing from now"
            text = f"{text}, {more} ({reason})" if parts else f"{more} ({reason})"
        if not self.split_known:
            text += "; the split by type is not reported, so every instance counts at the weakest figure"
        return text


def _rate(figure: InstanceCapacity | float) -> float:
    return figure.requests_per_minute if isinstance(figure, InstanceCapacity) else float(figure)
