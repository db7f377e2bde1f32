"""Host-side checks of env settings and params: a ValueError of one line naming the bad value and what is
allowed (the registry reports it as the user's mistake)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

INT32_MAX = 2**31 - 1  # env parameters are int32 and float32 inside the compiled step

# A rule of `check`: a parameter's name (or several names), a test of its value, and what is allowed.
Rule = tuple[str | tuple[str, ...], Callable[[Any], bool], str]


def whole(x: Any) -> float:
    """x if it is a whole number that fits int32, else NaN (so that every range check on it fails)."""
    x = float(x)
    return x if math.isfinite(x) and x == int(x) and abs(x) <= INT32_MAX else math.nan


def finite32(x: Any) -> bool:
    """Whether x is a finite float32 (1e39 is not: it becomes inf inside the step)."""
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.float32(float(x))))


# Tests and allowed values that several envs' rules share: `(name, *FINITE)`.
COUNT = (lambda x: whole(x) >= 1, f"an integer from 1 to {INT32_MAX}")
FINITE = (finite32, "a finite float32")
SHARE = (lambda x: 0 <= float(x) <= 1, "a number from 0 to 1")


def check(params: Any, *rules: Rule) -> None:
    """ValueError "name=value is invalid: must be <allowed>" for the first parameter whose test fails, in order."""
    for names, ok, allowed in rules:
        for name in (names,) if isinstance(names, str) else names:
            if not ok(getattr(params, name)):
                raise ValueError(f"{name}={getattr(params, name)!r} is invalid: must be {allowed}")


def check_int_setting(what: str, value: Any, low: int, high: int, high_text: str | None = None) -> None:
    """ValueError "<what> must be an integer from <low> to <high>, got <value>" unless `value` is an int (not a
    bool) in [low, high]: a constructor setting (`high_text` says the upper bound in words)."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        upto = high if high_text is None else high_text
        raise ValueError(f"{what} must be an integer from {low} to {upto}, got {value!r}")
