"""Full-length reproductions (every case at its published duration, 8
seeds, every assumption variant): minutes, so CI skips them; the release
checklist runs them (docs/reproductions.md):

    QOSLAB_RELEASE=1 pytest -m release tests
"""

from __future__ import annotations

import pytest
from qoslab import reproduce as rp


@pytest.mark.release
@pytest.mark.parametrize("name", list(rp.EXPERIMENTS))
def test_full_length_reproduction(name):
    rep = rp.reproduce(name, quick=False, seeds=rp.DEFAULT_SEEDS)
    assert rep.rows and rep.runs >= len(rep.experiment.cases) * rp.DEFAULT_SEEDS
    for r in rep.rows:
        assert r.verdict in ("holds", "off", "fails")
        assert (r.source is None) == (r.kind == "sanity")
        assert not any(v.get("missing") for v in r.variants), (r.case, r.metric)
    # the claims the quick runs reproduce also hold at full length
    from test_reproduce import EXPECTED

    for (exp, case, metric), verdict in EXPECTED.items():
        if exp == name:
            (row,) = [r for r in rep.rows if (r.case, r.metric) == (case, metric)]
            assert row.verdict == verdict, (row.ours, row.note)
