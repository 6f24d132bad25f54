"""The percentile the benchmarks report: nearest rank, so every figure is a latency that
was measured, not one interpolated between two."""

from __future__ import annotations

import math


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list (NaN for an empty one)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]
