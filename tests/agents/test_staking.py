"""The progression systems as data (agents.staking): the evaluator's stacked kernel gives the reports of
the code it replaced to the bit, and the same reports as each system played alone."""

import gzip
import hashlib
import json
import warnings

import numpy as np
import pytest

from pb_gym.agents import staking, systems
from pb_gym.experiments import evaluate
from pb_gym.experiments.common.yaml_config import validate

from repo_paths import DATA, ROOT  # noqa: E402

PROGRESSIONS = [
    {"type": "flat", "bet": "banker"},
    {"type": "flat", "bet": "dragon7", "name": "flat dragon7"},
    {"type": "martingale", "bet": "banker", "on_cap": "reset"},
    {"type": "martingale", "bet": "player"},
    {"type": "martingale", "bet": "banker", "recovering": True, "name": "recovering"},
    {"type": "martingale", "bet": "tie", "recovering": True, "on_cap": "reset", "name": "recovering tie"},
    {"type": "grand_martingale", "bet": "banker", "on_cap": "reset"},
    {"type": "grand_martingale", "bet": "player", "name": "grand player"},
    {"type": "reverse_martingale", "bet": "banker"},
    {"type": "paroli", "bet": "player", "wins_to_reset": 2},
    {"type": "paroli", "bet": "banker", "on_cap": "reset", "name": "paroli reset"},
    {"type": "dalembert", "bet": "banker", "on_cap": "reset"},
    {"type": "dalembert", "bet": "player", "base": 2, "name": "dalembert 2"},
    {"type": "fibonacci", "bet": "banker"},
    {"type": "fibonacci", "bet": "player", "on_cap": "reset", "name": "fibonacci reset"},
    {"type": "labouchere", "bet": "banker", "line": [1, 2, 3, 4]},
    {"type": "labouchere", "bet": "player", "line": [1] * 18, "on_cap": "reset", "name": "long line"},
    {"type": "labouchere", "bet": "banker", "line": [0.5, 1, 1.5], "base": 2, "name": "halves"},
    {"type": "one_three_two_six", "bet": "banker"},
    {"type": "one_three_two_six", "bet": "player", "on_cap": "reset", "name": "1326 reset"},
    {"type": "oscars_grind", "bet": "banker"},
    {"type": "oscars_grind", "bet": "player", "on_cap": "reset", "name": "oscar reset"},
    {"type": "oscars_grind", "bet": "tie", "name": "oscar tie"},
    {"type": "follow_winner"},
    {"type": "chop"},
    {"type": "random", "bets": ["banker", "player"]},
    {"type": "random", "bets": ["banker", "player", "tie", "dragon7"], "p_bet": 0.6, "name": "sometimes"},
]
STUDIES = {
    "limits": {
        "name": "limits",
        "rules": {"decks": 6, "side_bets": ["dragon7", "panda8"]},
        "table": {"unit": 10, "minimum": 10, "maximum": 400},
        "bankroll": 1000,
        "sessions": 240,
        "hands": 300,
        "win_goal": 300,
        "seed": 7,
        "systems": PROGRESSIONS,
        "sample_paths": 5,
        "chunk_sessions": 100,
    },
    "one shoe": {
        "name": "one shoe",
        "rules": {"decks": 8, "banker_variant": "ez"},
        "table": {"unit": 5, "minimum": 5, "maximum": 1000},
        "bankroll": 500,
        "sessions": 150,
        "hands": 200,
        "stop_loss": 200,
        "win_goal": None,
        "seed": 11,
        "systems": PROGRESSIONS,
        "one_shoe": True,
    },
}
RECORDED = {
    "limits": "ba1bac0c31b5c8810dec54d402e098111231021b941318ab7140064a9823e74b",
    "one shoe": "cbdc819b350b5a07ef0c2dad1b0fdc1d42b1fad2aeb45d550dee557e07e46433",
}
"""The digests of these studies' reports as the per-system numpy code computed them, before the
progressions became programs of one kernel."""


def _canonical(value):
    """A report as exact, JSON-ready data: floats as their hex form, arrays with dtype and shape."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items() if k != "timings"}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return {
            "dtype": str(value.dtype),
            "shape": list(value.shape),
            "data": _canonical(value.ravel().tolist()),
        }
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, np.integer):
        return int(value)
    return value


def report_digest(report: dict) -> str:
    """The SHA-256 of a report, every float to the bit (its timings left out)."""
    return hashlib.sha256(json.dumps(_canonical(report), sort_keys=True).encode()).hexdigest()


REPORTS = DATA / "staking_reports.json.gz"
"""These studies' reports in the form of :func:`_canonical` (written by ``PYTHONPATH=tests python
tests/agents/test_staking.py`` on the machine where their digests were recorded), so that a report
that does not match its digest says which values moved and by how much."""
FLOAT_TOLERANCE = 1e-9
"""Relative difference allowed to a float elsewhere than on the recording machine: numpy's matrix
products call OpenBLAS, which picks its kernels by CPU, and that moves the last bits of a dot product
(``OPENBLAS_CORETYPE=Haswell`` moves one float of each report here, a CI bound and a stake-weighted
exact edge, by 1e-15). Every integer, flag and name must match exactly, and the floats to the bit where
they can."""


def _differences(live, recorded, path="report"):
    """``(path, live, recorded)`` of each value of a live report that its recorded canonical form does
    not hold: exact for everything but floats, floats beyond :data:`FLOAT_TOLERANCE` (with the largest
    relative difference of the floats that did not match to the bit, as the path ``None``)."""
    if isinstance(live, dict):
        live = {str(k): v for k, v in live.items() if k != "timings"}
        if sorted(live) != sorted(recorded):
            return [(path + " keys", sorted(live), sorted(recorded))]
        return [d for k in sorted(live) for d in _differences(live[k], recorded[k], f"{path}.{k}")]
    if isinstance(live, np.ndarray):
        if [str(live.dtype), list(live.shape)] != [recorded["dtype"], recorded["shape"]]:
            return [(path + " dtype/shape", (live.dtype, live.shape), (recorded["dtype"], recorded["shape"]))]
        return _differences(live.ravel().tolist(), recorded["data"], path)
    if isinstance(live, (list, tuple)):
        if len(live) != len(recorded):
            return [(path + " length", len(live), len(recorded))]
        return [
            d
            for i, (a, b) in enumerate(zip(live, recorded, strict=True))
            for d in _differences(a, b, f"{path}[{i}]")
        ]
    if isinstance(live, (float, np.floating)):
        want = float.fromhex(recorded)
        if float(live) == want or (np.isnan(live) and np.isnan(want)):
            return []
        gap = abs(float(live) - want) / max(abs(want), abs(float(live)), 1e-300)
        return [(path, float(live), want)] if gap > FLOAT_TOLERANCE else [(None, gap, 0.0)]
    return [] if _canonical(live) == recorded else [(path, live, recorded)]


@pytest.mark.parametrize("name", list(STUDIES))
def test_reports_are_those_of_the_code_before(name):
    """To the bit on the recording machine (the digest); elsewhere every value but the floats exactly,
    and the floats within :data:`FLOAT_TOLERANCE` (a warning counts those that moved at all)."""
    with gzip.open(REPORTS, "rt") as file:
        recorded = json.load(file)[name]
    assert hashlib.sha256(json.dumps(recorded, sort_keys=True).encode()).hexdigest() == RECORDED[name]
    report = evaluate.run_study(validate(STUDIES[name], evaluate.StudyConfig, "study.yaml"))
    if report_digest(report) == RECORDED[name]:
        return
    differences = _differences(report, recorded)
    moved = [gap for path, gap, _ in differences if path is None]
    wrong = [d for d in differences if d[0] is not None]
    assert not wrong, f"{len(wrong)} values differ from the code before's report; the first: {wrong[:5]}"
    warnings.warn(
        f"{name!r}: {len(moved)} floats differ from the recording machine's in their last bits "
        f"(largest relative difference {max(moved, default=0.0):.1e}); every other value is the same",
        stacklevel=1,
    )


def test_the_comparison_tells_the_last_bits_from_a_changed_value():
    recorded = _canonical({"mean": 0.1, "bets": 3, "name": "flat", "path": np.array([1.0, 2.0])})
    same = {"mean": 0.1, "bets": 3, "name": "flat", "path": np.array([1.0, 2.0])}
    assert _differences(same, recorded) == []
    ((path, gap, _),) = _differences(same | {"mean": np.nextafter(0.1, 1.0)}, recorded)
    assert path is None and 0 < gap < 1e-15
    assert _differences(same | {"mean": 0.1000001}, recorded) == [("report.mean", 0.1000001, 0.1)]
    assert _differences(same | {"bets": 4}, recorded) == [("report.bets", 4, 3)]
    assert _differences(same | {"path": np.array([1.0, 2.5])}, recorded) == [("report.path[1]", 2.5, 2.0)]
    assert _differences(same | {"path": np.array([1, 2])}, recorded)[0][0] == "report.path dtype/shape"


def test_the_stacked_kernel_plays_each_system_as_it_plays_alone(monkeypatch):
    """Every progression seat played by the evaluator's one stacked kernel call, and every seat played
    through its own propose and update (one-seat programs, the Python accounting), give one report."""
    config = validate(STUDIES["limits"] | {"sessions": 120, "hands": 150}, evaluate.StudyConfig, "study.yaml")
    stacked = evaluate.run_study(config)
    monkeypatch.setattr(systems.Programmed, "compiled", lambda self: False)
    alone = evaluate.run_study(config)
    assert report_digest(stacked) == report_digest(alone)
    assert stacked["systems"][2]["table_max_binds"] > 0  # the limits do bind (on_cap: reset)


def test_the_bench_measures_the_main_jobs_study():
    """pb-gym bench's evaluate figures are measured on configs/systems/classic.yaml's study (the
    configs are no part of the package, so the bench holds a copy: it must not drift)."""
    import yaml

    from pb_gym.experiments.evaluate import seat_cost as bench_evaluate

    shipped = yaml.safe_load((ROOT / "configs/systems/classic.yaml").read_text())
    for key in ("sessions", "hands", "stop_loss"):
        shipped.pop(key)
    assert bench_evaluate.CLASSIC == shipped


def test_a_subclass_that_overrides_propose_is_played_through_it():
    class Shy(systems.Flat):
        def propose(self, view):
            return super().propose(view)._replace(units=np.full(self.n, 2.0))

    assert systems.Flat().compiled() and not Shy().compiled()


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"progression": "doubled"},
            r"Program.progression='doubled' is not allowed; allowed: flat, doubling",
        ),
        ({"choice": "any"}, r"Program.choice='any' is not allowed; allowed: fixed, follow, chop, drawn"),
        ({"sequence": ()}, r"Program.sequence: at least one number"),
    ],
)
def test_a_bad_program_names_the_field_and_what_is_allowed(change, message):
    with pytest.raises(ValueError, match=message):
        staking.Program(**({"progression": "flat", "columns": (0, 0), "base": 1.0} | change))


def _record() -> None:
    """Write :data:`REPORTS` from the code as it is (run only where the digests still match)."""
    reports = {}
    for name, study in STUDIES.items():
        report = evaluate.run_study(validate(study, evaluate.StudyConfig, "study.yaml"))
        if report_digest(report) != RECORDED[name]:
            raise SystemExit(f"{name!r}: this machine's report is not the recorded one; not written")
        reports[name] = _canonical(report)
    with gzip.GzipFile(REPORTS, "wb", mtime=0) as file:
        file.write(json.dumps(reports, sort_keys=True).encode())


if __name__ == "__main__":
    _record()


def _numpy_kelly_fraction(q: np.ndarray, x: np.ndarray, high: float, iterations: int = 60) -> np.ndarray:
    """The bisection of the Kelly fraction as plain numpy array code (the reference)."""
    lo, hi = np.zeros(len(q)), np.full(len(q), high)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        rising = (q * x / (1.0 + mid[:, None] * x)).sum(axis=1) > 0
        lo, hi = np.where(rising, mid, lo), np.where(rising, hi, mid)
    return lo


@pytest.mark.parametrize("payoffs", [1, 2, 7, 8, 9, 16, 129, 300])
def test_the_compiled_kelly_bisection_gives_numpys_bits(payoffs):
    # numpy sums fewer than eight terms in order and more pairwise: both are reproduced, so a Kelly
    # bettor's stakes are the same bits as with the numpy bisection, for a bet of any payoff levels
    rng = np.random.default_rng(payoffs)
    x = np.append(rng.uniform(0.5, 50.0, payoffs - 1), -1.0) if payoffs > 1 else np.array([1.0])
    q = rng.dirichlet(np.ones(payoffs + 1), size=2000)[:, :payoffs] * 0.3
    q[:, -1] = 0.6
    q = q[q @ x > 0]
    assert len(q) > 1000
    got = staking.kelly_bisection(q, x, 1.0 - 1e-9, 60)
    np.testing.assert_array_equal(got, _numpy_kelly_fraction(q, x, 1.0 - 1e-9))
    assert np.all((got > 0) & (got < 1))
