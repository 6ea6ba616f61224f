"""A ``pb-gym evaluate`` report as its terminal printer reads it
(:func:`pb_gym.experiments.evaluate.report.print_report`): a system's row and the report around the
rows, for the tests of the table and of the names it escapes."""

import math


def system_row(name: str, ev: float, ci: list[float], exact: float, **more) -> dict:
    """A system's figures: ``ev`` per unit wagered with its 95% interval ``ci`` beside the exact edge
    ``exact``; ``type`` (flat), ``note`` (the interval note) and any other key of the row in ``more``."""
    within = None if math.isnan(ci[0]) else ci[0] <= exact <= ci[1]
    return {
        "name": name,
        "type": more.pop("type", "flat"),
        "hands": 9_869_207,
        "ev_per_unit_wagered": ev,
        "ci95": ci,
        "exact_edge": exact,
        "exact_edge_conditional": None,
        "edge_within_ci": within,
        "interval_note": more.pop("note", None),
        "p_ruin": 0.354,
        "p_stop_loss": 0.53,
        "p_target": 0.646,
        "median_final_bankroll": 1502.0,
        "table_max_binds": 0.0025,
        **more,
    }


def report(systems: list[dict], **more) -> dict:
    """The report of ``systems``: study ``classic``, 10,000 sessions of 1,000 hands in two chunks; any
    other key of the report in ``more``."""
    return {
        "name": "classic",
        "sessions": 10_000,
        "hands_per_session": 1000,
        "bankroll": 1000,
        "table": {"minimum": 10, "maximum": 5000, "unit": 10},
        "chunks": 2,
        "timings": {"seconds": 25.0},
        "systems": systems,
        **more,
    }
