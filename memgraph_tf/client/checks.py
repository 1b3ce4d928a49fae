"""Argument checks shared by the client's pipelines, models, trainers and inference (and open to
the layers above: a serving module may use them for its own settings).

Each check returns the value in its plain Python type or raises :class:`ConfigurationError` (a
``ValueError``) whose message names the argument, what was expected and the value given."""

from __future__ import annotations

from typing import Any

import numpy as np

from memgraph_tf.client.errors import ConfigurationError


def positive_int(name: str, value: Any) -> int:
    """``value`` as an ``int`` when it is an integer (Python or numpy, not a bool) ``>= 1``."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(f"{name}: expected an integer >= 1, got {value!r}")
    return int(value)


def positive_number(name: str, value: Any) -> float:
    """``value`` as a ``float`` when it is a number (not a bool) ``> 0``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ConfigurationError(f"{name}: expected a number > 0, got {value!r}")
    return float(value)


def rate(name: str, value: Any, upper: float = 1.0) -> float:
    """``value`` as a ``float`` when it is a number (not a bool) in ``[0, upper)``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value < upper:
        raise ConfigurationError(f"{name}: expected a number in [0, {upper}), got {value!r}")
    return float(value)
