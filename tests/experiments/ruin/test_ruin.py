"""Gambler's ruin: closed form vs Markov chain, chain vs simulation, configs, report and the notebook
lesson, and an interrupted study (the Martingale section included) resumed bit for bit."""

import json

import numpy as np
import pytest

from pb_gym import rules as R
from pb_gym.experiments import ruin
from pb_gym.experiments.common import chunk_store, stats
from pb_gym.experiments.common.yaml_config import ConfigError, validate
from pb_gym.experiments.ruin import lesson as ruin_report
from pb_gym.experiments.ruin import model as ruin_model
from pb_gym.experiments.ruin import simulation as ruin_simulation

from repo_paths import ROOT  # noqa: E402

SMOKE = ROOT / "configs" / "experiments" / "ruin-smoke.yaml"
FULL = ROOT / "configs" / "experiments" / "ruin.yaml"
RULES = R.Rules()


@pytest.mark.parametrize("bet", ["player", "fair_coin"])
@pytest.mark.parametrize("target", [2, 7, 20, 60])
def test_markov_chain_equals_the_closed_form_on_the_unit_walk(bet, target):
    steps = ruin_model.step_distribution(bet, RULES)
    assert steps["lattice"] == 1
    chain = ruin_model.markov_chain(steps, target)
    formula = ruin_model.closed_form(steps["p_win"], steps["p_lose"], chain["starts"], target)
    np.testing.assert_allclose(chain["p_win"], formula["p_win"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(chain["hands"], formula["hands"], rtol=1e-12, atol=0)


def test_closed_form_known_values():
    fair = ruin_model.closed_form(0.5, 0.5, np.array([3, 5]), 10)
    np.testing.assert_allclose(fair["p_win"], [0.3, 0.5])
    np.testing.assert_allclose(fair["hands"], [21, 25])
    # ties only lengthen the session: hands = decisions / (1 - P(tie))
    tied = ruin_model.closed_form(0.4, 0.4, np.array([3]), 10)
    np.testing.assert_allclose(tied["hands"], [21 / 0.8])
    biased = ruin_model.closed_form(0.4, 0.6, np.array([1]), 2)  # one decision decides it
    np.testing.assert_allclose([biased["p_win"][0], biased["hands"][0]], [0.4, 1.0])


def test_banker_chain_by_hand_and_banded_equals_dense():
    steps = ruin_model.step_distribution("banker", RULES)
    assert steps["lattice"] == 20 and steps["steps"] == [-20, 0, 19]
    pw, pl, pt = steps["p_win"], steps["p_lose"], steps["p_push"]
    # published 8-deck P(banker), P(tie) (Wizard of Odds; tests/data/published_figures.json)
    assert pw == pytest.approx(0.458597, abs=1e-6) and pt == pytest.approx(0.095156, abs=1e-6)
    # from 1 unit to 2: two banker wins (1 -> 1.95 -> 2.90) before any loss (1 -> 0, 1.95 -> 0.95)
    chain = ruin_model.markov_chain(steps, 2)
    w = pw / (pw + pl)
    assert chain["p_win"][0] == pytest.approx(w * w, abs=1e-14)
    assert chain["hands"][0] == pytest.approx((1 + w) / (1 - pt), rel=1e-13)
    for target in (3, 12, 31):
        banded = ruin_model.markov_chain(steps, target)
        dense = ruin_model.markov_chain(steps, target, dense=True)
        np.testing.assert_allclose(banded["p_win"], dense["p_win"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(banded["hands"], dense["hands"], rtol=1e-11)
        assert np.all(np.diff(banded["p_win"]) > 0)


def test_step_distributions_of_the_variants():
    nc = ruin_model.step_distribution("banker", R.Rules(banker_variant="no-commission"))
    assert nc["lattice"] == 2 and nc["steps"] == [-2, 0, 1, 2]
    ez = ruin_model.step_distribution("banker", R.Rules(banker_variant="ez"))
    assert ez["lattice"] == 1 and ez["steps"] == [-1, 0, 1]
    four = ruin_model.step_distribution("banker", R.Rules(commission=0.04))
    assert four["lattice"] == 25 and four["steps"] == [-25, 0, 24]
    for s in (nc, ez, four):
        assert sum(s["probabilities"]) == pytest.approx(1.0, abs=1e-14)


def _sessions(points, sessions):
    """Each session's point index, start and target (point after point)."""
    point = np.repeat(np.arange(len(points)), sessions)
    return point, np.array(points)[point, 0], np.array(points)[point, 1]


def _summaries(sims, point, points):
    """Each bet's per-point rows (simulation against the exact Markov chain)."""
    for bet, sim in sims.items():
        steps = ruin_model.step_distribution(bet, RULES)

        def exact_at(start, target, steps=steps):
            chain = ruin_model.markov_chain(steps, target)
            return chain["p_win"][start - 1], chain["hands"][start - 1]

        counts = ruin_simulation.session_counts(sim, point, len(points))
        yield bet, sim, ruin_simulation.summarize(counts, points, exact_at)


@pytest.mark.parametrize(
    ("points", "sessions", "seed", "max_hands"),
    [
        ([(3, 8), (6, 8), (4, 15)], 3000, 11, 10**6),
        pytest.param([(5, 10), (10, 40)], 40_000, 21, 10**7, marks=pytest.mark.slow),
    ],
)
def test_simulation_matches_the_exact_values(points, sessions, seed, max_hands):
    """Sessions dealt by the engine (player, banker) and numpy (coin): the exact P(success) and
    expected hands within 4 standard errors (|z| < 4: a 99.99% interval), 3000 sessions a point
    (40,000 in the slow variant)."""
    point, starts, targets = _sessions(points, sessions)
    sims = ruin_simulation.simulate_engine(
        RULES, ["player", "banker"], starts, targets, seed=seed, max_hands=max_hands
    )
    sims["fair_coin"] = ruin_simulation.simulate_coin(starts, targets, seed=seed + 1, max_hands=max_hands)
    for bet, sim, rows in _summaries(sims, point, points):
        for k, row in enumerate(rows):
            assert row["unfinished"] == 0 and row["sessions"] == sessions
            assert row["ruins"] == sessions - round(row["p_win"] * sessions)
            # the mean and standard deviation from the integer sums equal numpy's on the sessions
            hands = sim["hands"][point == k].astype(np.float64)
            assert row["hands"] == pytest.approx(hands.mean(), rel=1e-14)
            se = (row["hands_ci95"][1] - row["hands_ci95"][0]) / (2 * stats.Z95)
            assert se == pytest.approx(hands.std(ddof=1) / np.sqrt(sessions), rel=1e-9)
            assert abs(row["p_win_z"]) < 4 and abs(row["hands_z"]) < 4, (bet, row)
    # the banker steps of +0.95: a success can overshoot, a ruin leaves < 1 unit
    assert sims["banker"]["success"].mean() > 0


def test_session_counts_exclude_unfinished_sessions():
    sim = {
        "success": np.array([True, False, False, True, False]),
        "finished": np.array([True, True, False, True, True]),
        "hands": np.array([3, 5, 100, 7, 2]),
    }
    counts = ruin_simulation.session_counts(sim, np.array([0, 0, 0, 1, 1]), 3)
    assert counts["finished"].tolist() == [2, 2, 0] and counts["unfinished"].tolist() == [1, 0, 0]
    assert counts["successes"].tolist() == [1, 1, 0] and counts["ruins"].tolist() == [1, 1, 0]
    assert counts["hands"].tolist() == [8, 9, 0] and counts["hands_sq"].tolist() == [34, 53, 0]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"vs_start": {"target": 20, "simulate": [5, 20]}},
            r"vs_start\.simulate: every starting bankroll must be in 1\.\.19 \(below the target 20\); "
            r"20 is not",
        ),
        (
            {"vs_target": {"start": 10, "max_target": 10, "simulate": []}},
            r"vs_target\.max_target: must be above start \(10\) \(got 10\)",
        ),
        (
            {"vs_target": {"simulate": [5]}},
            r"vs_target\.simulate: every target must be in 11\.\.100 \(above start, at most max_target\); "
            r"5 is not",
        ),
        (
            {"vs_start": {"tagret": 5}},
            r"r\.yaml: vs_start\.tagret: unknown key; allowed keys here: target, simulate",
        ),
        ({"bets": ["tie"]}, r"bets\.0: Input should be 'player', 'banker' or 'fair_coin'"),
        ({"bets": ["player", "player"]}, r"each at most once"),
        ({"sessions": 1}, r"sessions: Input should be greater than or equal to 10"),
    ],
)
def test_config_errors_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message):
        validate(data, ruin.RuinConfig, "r.yaml")


def test_bad_yaml_is_refused_and_the_full_config_loads(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [1, 2\n")
    with pytest.raises(ConfigError, match=r"not valid YAML"):
        ruin.main(str(bad))
    full = validate(__import__("yaml").safe_load(FULL.read_text()), ruin.RuinConfig)
    assert full.vs_start.target == 20 and full.bets == ("player", "banker", "fair_coin")


def test_smoke_run_end_to_end(tmp_path, capsys):
    result = ruin.main(str(SMOKE), str(tmp_path), as_json=True)
    assert capsys.readouterr().out == ""
    assert set(result["exact"]) == set(result["simulated"]) == {"player", "banker", "fair_coin"}
    for bet in ("player", "fair_coin"):
        diff = result["exact"][bet]["closed_form_max_abs_diff"]
        assert diff["p_win"] < 1e-12 and diff["hands_relative"] < 1e-12
    assert "closed_form_max_abs_diff" not in result["exact"]["banker"]
    assert result["max_abs_z"] < 4
    assert result["chunk_sessions"] == 300 and result["chunks"] == 6  # 4 points x 400 sessions
    for rows in result["simulated"].values():
        assert len(rows) == 4
        for r in rows:
            assert r["p_win_ci95"][0] <= r["p_win"] <= r["p_win_ci95"][1]
            assert r["sessions"] == 400 and r["unfinished"] == 0
    page = (tmp_path / "report.md").read_text()
    assert "![ruin](ruin.png)" in page and "## The Martingale illusion" in page
    assert "![martingale](martingale.png)" in page and ruin_report.MARTINGALE_SECTION not in page
    assert (tmp_path / "ruin.png").stat().st_size > 10_000
    assert (tmp_path / "martingale.png").read_bytes()[:4] == b"\x89PNG"
    # the Martingale illusion: same edge (5-sigma bound), different shape
    illusion = result["martingale"]
    assert [(r["system"], r["table_max"]) for r in illusion["rows"]] == [
        ("martingale", 8),
        ("flat", 8),
        ("martingale", 64),
    ]
    for r in illusion["rows"]:
        lo, hi = r["ci95"]
        assert abs(r["ev_per_unit_wagered"] - r["exact_edge"]) < 5 * (hi - lo) / (2 * stats.Z95)
        assert r["p_goal"] + r["p_loss"] <= 1.0
    mart, flat = illusion["rows"][0], illusion["rows"][1]
    assert mart["p_goal"] > flat["p_goal"] and mart["mean_loss_when_lost"] > flat["mean_loss_when_lost"]
    assert sum(sum(h) for h in illusion["histograms"].values()) == 3 * 300
    assert json.loads((tmp_path / "ruin.json").read_text())["seed"] == 2
    ruin.main(str(SMOKE), None, as_json=False)
    assert "largest |z|" in capsys.readouterr().out


def _notebook() -> dict:
    notebook = json.loads((ROOT / "examples" / "ruin.ipynb").read_text())
    assert notebook["nbformat"] == 4
    return notebook


def test_the_notebook_lesson_runs_without_jupyter_and_keeps_its_figures(monkeypatch):
    """The lesson's code cells, exec'd in order (no Jupyter kernel needed; matplotlib draws off screen),
    compute the lab's exact 0.4322 and deal the lab's sessions; the committed notebook keeps its figures
    (PNG outputs) and its typeset formulas, and needs no path or environment set-up."""
    import matplotlib

    matplotlib.use("Agg")
    from pb_gym.experiments.lab import gamblers_ruin

    notebook = _notebook()
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    namespace: dict = {}
    for cell, source in zip(notebook["cells"], sources, strict=True):
        if cell["cell_type"] == "code":
            exec(compile(source, "ruin.ipynb", "exec"), namespace)
    assert round(namespace["exact"]["p_target"], 4) == 0.4322
    dealt = gamblers_ruin.ruin_sessions("player", 10, 20, 1, 1000, 15)
    assert namespace["dealt"]["success"].sum() == dealt["success"].sum()
    images = [
        output
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert len(images) >= 3
    assert any("\\frac{1 - r^i}{1 - r^N}" in source for source in sources)
    assert not any(word in source for source in sources for word in ("os.environ", "Path(", "sys.path"))


def test_the_notebook_runs_in_a_jupyter_kernel(tmp_path):
    """Where the notebook extra is installed: the notebook, run top to bottom by a Jupyter kernel, ends
    without an error."""
    nbclient = pytest.importorskip("nbclient", reason="the 'notebook' extra is not installed")
    pytest.importorskip("ipykernel", reason="the 'notebook' extra is not installed")
    import nbformat

    notebook = nbformat.reads(json.dumps(_notebook()), as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [
        o for cell in notebook.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert errors == []


def _comparable(result: dict) -> str:
    """The result as JSON without the wall-clock times and the file names (all else must be equal)."""
    return json.dumps({k: v for k, v in result.items() if k not in ("timings", "files")}, sort_keys=True)


def test_an_interrupted_martingale_section_resumes_bit_for_bit(tmp_path, monkeypatch):
    """Ctrl-C in the Martingale section, right after its first study's chunk is stored, then the same
    command: only the missing chunk runs (none of the simulation's), and the result and the files equal
    an uninterrupted run's; a rerun with another Martingale config refuses to mix the chunks."""
    whole = ruin.main(str(SMOKE), str(tmp_path / "whole"), as_json=True)
    save, saved = chunk_store.ChunkStore.save, []

    def save_then_interrupt(store, chunk, result):
        save(store, chunk, result)
        saved.append((store.directory.name, chunk.index))
        if store.directory.name == "martingale-max-8":
            raise KeyboardInterrupt  # Ctrl-C (or a kill) once the chunk is on disk

    monkeypatch.setattr(chunk_store.ChunkStore, "save", save_then_interrupt)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        ruin.main(str(SMOKE), str(out), as_json=True)
    assert saved == [(".partial", i) for i in range(6)] + [("martingale-max-8", 0)]
    assert [p.name for p in out.iterdir()] == [".partial"]  # no report, the finished chunks kept
    assert sorted(p.name for p in (out / ".partial" / "martingale-max-8").iterdir()) == [
        "chunk-000000.json.gz",
        "run.json",
    ]

    # another Martingale config: refused before anything runs, the chunks left as they are
    other = tmp_path / "other.yaml"
    other.write_text(SMOKE.read_text().replace("goal: 5", "goal: 6"))
    with pytest.raises(
        chunk_store.ResumeError,
        match=r"holds 6 finished chunk\(s\) of another run "
        r"\(it differs in config\.martingale\.goal;",
    ):
        ruin.main(str(other), str(out), as_json=True)

    def save_and_record(store, chunk, result):
        save(store, chunk, result)
        saved.append((store.directory.name, chunk.index))

    monkeypatch.setattr(chunk_store.ChunkStore, "save", save_and_record)
    saved.clear()
    resumed = ruin.main(str(SMOKE), str(out), as_json=True)
    assert saved == [("martingale-max-64", 0)]  # only what the interruption left undone
    assert _comparable(resumed) == _comparable(whole)
    assert sorted(p.name for p in out.iterdir()) == sorted(ruin.OUTPUT_NAMES)  # .partial removed
    for name in ("report.md", "ruin.png", "martingale.png"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert _comparable(json.loads((out / "ruin.json").read_text())) == _comparable(
        json.loads((tmp_path / "whole" / "ruin.json").read_text())
    )


def test_the_text_and_markdown_tables_share_their_rows():
    """One row builder per table: the text report and the teaching page show the same cells; a point
    where no session finished (null in the JSON) reads n/a in both."""
    row = {
        "start": 3,
        "target": 10,
        "sessions": 0,
        "p_win": None,
        "p_win_ci95": [None, None],
        "p_win_exact": 0.27189,
        "hands": None,
        "hands_ci95": [None, None],
        "hands_exact": 22.84,
    }
    cells = ruin_report.point_rows({"simulated": {"player": [row]}})
    assert cells == [
        {
            "bet": "player",
            "start": "3",
            "target": "10",
            "p_win": "n/a",
            "p_win_ci": "[n/a, n/a]",
            "p_win_exact": "0.2719",
            "hands": "n/a",
            "hands_ci": "[n/a, n/a]",
            "hands_exact": "22.8",
        }
    ]
    mart = {
        "system": "martingale",
        "table_max": 8,
        "p_goal": 0.82667,
        "p_loss": 0.16333,
        "mean_loss_when_lost": 41.94,
        "mean_result": -2.35,
        "ev_per_unit_wagered": -0.019812,
        "ci95": [-0.036751, -0.002873],
        "exact_edge": -0.0105791,
    }
    text, page = (
        ruin_report.martingale_rows({"rows": [mart]}, style)[0]
        for style in (ruin_report.TEXT, ruin_report.PAGE)
    )
    assert (text["p_goal"], text["result"], text["ev"], text["ev_ci"]) == (
        "0.8267",
        "-2.35",
        "-1.981%",
        "[-3.675, -0.287]",
    )
    assert (page["p_goal"], page["result"], page["ev"], page["ev_ci"]) == (
        "0.827",
        "-2.35",
        "-1.98%",
        "[-3.68, -0.29]",
    )
    assert text["exact"] == page["exact"] == "-1.058%"


def test_a_martingale_section_too_large_is_refused_before_the_simulation(tmp_path, monkeypatch):
    """The Martingale section's memory is checked with the simulation's, before anything runs."""
    from pb_gym import memory

    def no_simulation(*args, **kwargs):
        raise AssertionError("the simulation ran before the Martingale section was sized")

    monkeypatch.setattr(ruin, "simulate_chunk", no_simulation)
    config = tmp_path / "big.yaml"
    config.write_text("sessions: 400\nmartingale:\n  sessions: 1000000000000\n")
    with pytest.raises(ConfigError, match=r"ruin.martingale: sessions x hands = 1,000,000,000,000 x 1,000"):
        ruin.main(str(config), str(tmp_path / "out"), as_json=True)  # beyond any run: a config error
    monkeypatch.setattr(memory, "available_bytes", lambda: 10**9)  # and beyond this machine's memory:
    config.write_text("sessions: 400\nmartingale:\n  sessions: 100000000\n")
    with pytest.raises(
        memory.TooLarge,
        match=r"^the ruin study's Martingale section: the study "
        r"'martingale-max-8' \(100,000,000 sessions in "
        r"chunks of 5,000\) needs about .* \(the keys are under "
        r"`martingale:` in the ruin config\)$",
    ):
        ruin.main(str(config), str(tmp_path / "out"), as_json=True)
    assert not (tmp_path / "out").exists()
