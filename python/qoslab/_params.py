"""A conditioner's ``describe`` pairs as a dict and as lines for people.

Kept apart from :mod:`qoslab.api` (which re-exports them) because that
module is built on NumPy, and the results summary and terminal table of
``qoslab run`` use these without importing NumPy.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LIST_KEYS", "params_dict", "params_lines"]

#: Keys a description lists once per item (a tree's classes, a prio's
#: bands, the warnings): always a list in :func:`params_dict`.
LIST_KEYS = ("band", "class", "warning")


def params_dict(pairs: Any) -> dict[str, str | list[str]]:
    """A conditioner's ``describe`` pairs as a dict: each key once, its
    value a string, except the keys of :data:`LIST_KEYS` and any key given
    more than once, whose values are kept, in order, as a list (``dict()``
    of the pairs would keep only a tree's last class)."""
    out: dict[str, str | list[str]] = {}
    for k, v in pairs:
        if k in out or k in LIST_KEYS:
            prev = out.get(k, [])
            out[k] = [*([prev] if isinstance(prev, str) else prev), v]
        else:
            out[k] = v
    return out


def params_lines(params: dict[str, str | list[str]]) -> list[str]:
    """``params`` for people: one line of the single values (``kind`` left
    out), then one line per listed item (``class id=20 parent=1 ...``)."""
    head = " ".join(f"{k}={v}" for k, v in params.items() if k != "kind" and isinstance(v, str))
    items = [f"{k} {x}" for k, v in params.items() if not isinstance(v, str) for x in v]
    return [head, *items]
