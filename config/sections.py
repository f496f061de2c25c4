"""Field validation that keeps what is valid, so cross-field checks can still run on it.

`validate_partial` validates a value against a type and returns, next to the pydantic errors, the
value rebuilt from its valid parts: every field, list item or mapping entry that failed is replaced
by `INVALID`. A check that touches `INVALID` in any way (reads an attribute, compares, formats,
hashes, iterates, does arithmetic) raises `InvalidInput`, and `config.checks.check_environment`
skips that check: its inputs are already reported as field errors. Checks that touch only valid
fields run as if the whole config were valid, so one bad field hides no other problem.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo


class InvalidInput(Exception):
    """A check used a value that failed field validation; the check is skipped."""


class _Invalid:
    """Stands for a value that failed field validation. Every use raises InvalidInput.

    `is None` cannot be intercepted: checks test optional fields with `is_none`.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidInput

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probe dunders: plain "no such attribute"
            raise AttributeError(name)
        raise InvalidInput

    def __repr__(self) -> str:
        return "INVALID"

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __bool__ = _refuse  # type: ignore[assignment]
    __len__ = __iter__ = __contains__ = __getitem__ = __str__ = __format__ = _refuse  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _refuse
    __int__ = __float__ = __index__ = __round__ = __ceil__ = __floor__ = __trunc__ = _refuse


INVALID: Any = _Invalid()


def is_none(value: Any) -> bool:
    """`value is None` for an optional field; raises InvalidInput when the field failed validation."""
    if value is INVALID:
        raise InvalidInput
    return value is None


def skip_invalid(check: typing.Callable[..., list], *args: Any) -> list:
    """Run `check(*args)`; [] if it touched an invalid value. For per-item checks inside a loop."""
    try:
        return check(*args)
    except InvalidInput:
        return []


def field_type(field: FieldInfo) -> Any:
    """A model field's type with its constraints (ge, pattern, min_length, ...)."""
    return Annotated[field.annotation, field]


@cache
def _adapter(tp: Any) -> TypeAdapter:
    return TypeAdapter(tp)


def validate_partial(tp: Any, raw: Any) -> tuple[Any, list[dict]]:
    """(value with INVALID where validation failed, pydantic errors with locations relative to `raw`)."""
    try:
        return _adapter(tp).validate_python(raw), []
    except ValidationError as error:
        errors = error.errors()
    return _salvage(tp, raw, [tuple(e["loc"]) for e in errors]), errors


def _salvage(tp: Any, raw: Any, locs: list[tuple]) -> Any:
    """Rebuild `raw` as `tp` where no error lies beneath; INVALID where one does."""
    if not locs:
        try:
            return _adapter(tp).validate_python(raw)
        except ValidationError:  # valid only together with what failed: treat as failed
            return INVALID
    if () in locs:  # the value itself failed (type, range, list length, model-level rule)
        return INVALID
    inner = _unwrap(tp)
    origin = get_origin(inner)
    if isinstance(inner, type) and issubclass(inner, BaseModel) and isinstance(raw, dict):
        values = {}
        for name, field in inner.model_fields.items():
            below = [loc[1:] for loc in locs if loc[0] == name]
            if name in raw:
                values[name] = _salvage(field_type(field), raw[name], below)
            else:
                values[name] = INVALID if field.is_required() else field.get_default(call_default_factory=True)
        return inner.model_construct(**values)
    if origin is list and isinstance(raw, list):
        (item_tp,) = get_args(inner)
        return [_salvage(item_tp, item, [loc[1:] for loc in locs if loc[0] == i]) for i, item in enumerate(raw)]
    if origin is dict and isinstance(raw, dict):
        _, value_tp = get_args(inner)
        salvaged = {}
        for key, value in raw.items():
            below = [loc[1:] for loc in locs if loc[0] == key]
            if any(loc[:1] == ("[key]",) for loc in below):
                continue  # the key itself is invalid (reported): nothing to address the entry by
            salvaged[key] = _salvage(value_tp, value, below)
        return salvaged
    return INVALID


def _unwrap(tp: Any) -> Any:
    """`Annotated[X, ...]` -> X; `X | None` -> X (pydantic reports no union tag for it); else tp."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        members = [arg for arg in get_args(tp) if arg is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return tp
