"""The bounded chaos soak (``make soak`` runs the long one): see ``tests/soak.py``."""

from __future__ import annotations

import pytest

from tests.soak import FAULTS, SoakConfig, healthy, report, run


@pytest.mark.slow
@pytest.mark.xdist_group("lease-processes")  # not beside the multi-process scenarios
@pytest.mark.timeout(300)
def test_bounded_chaos_soak_converges_with_nothing_lost() -> None:
    config = SoakConfig(mutations=3_000, objects=300, min_faults=8, fault_gap=(8, 20),
                        converge_seconds=60, seed=7)
    figures = run(config)
    print(report(figures))
    assert figures.mutations >= config.mutations
    assert all(figures.faults[kind] >= config.min_faults for kind in FAULTS), figures.faults
    assert figures.divergences == 0, figures.problems
    assert figures.lost_deletions == 0, figures.problems
    assert figures.story_errors == 0, figures.problems
    assert figures.concurrent_handler_calls == 0
    assert figures.double_processing == 0
    assert figures.leaked_threads == 0 and figures.pending_notifications == 0
    assert figures.lists > 0 and figures.watches > 0
    assert healthy(figures, config)
