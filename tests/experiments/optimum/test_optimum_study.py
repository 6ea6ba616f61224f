"""The session-optimum study (``pb-gym experiment optimum``), and where evaluate's exact chain and the
session solver agree: the same session, the same figures."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from pb_gym import session_optimum as so
from pb_gym.experiments import cli, optimum
from pb_gym.experiments.common.yaml_config import ConfigError, load
from pb_gym.experiments.evaluate import exact_chain

from repo_paths import ROOT  # noqa: E402

SMOKE = str(ROOT / "configs" / "experiments" / "optimum-smoke.yaml")


def chain_p_goal(target: so.Session, system: dict) -> dict:
    """Evaluate's exact chain of one system on ``target``."""
    config = optimum.chain_config(target, [system])
    return exact_chain.exact_system(config.systems[0], config)


# ---------------------------------------------------------------- the two calculations agree
@pytest.mark.parametrize("bet", ["player", "banker", "tie"])
@pytest.mark.parametrize(("goal", "table_max", "hands"), [(20, 10, 100), (15, None, 30), (13, 2, 40)])
def test_flat_one_unit_is_timid_play_in_both(bet, goal, table_max, hands):
    """Flat one unit (the table minimum): the chain's P(goal) is the solver's value of timid play.
    Below one unit neither can stake (the chain ends the session as ruin; the solver sits out to the
    end), and the 1/20-unit lattice keeps every bankroll 1e-9 or more from the goal but the goal."""
    target = so.Session(bankroll=10, goal=goal, hands=hands, table_max=table_max)
    chain = chain_p_goal(target, {"type": "flat", "bet": bet})
    assert chain["p_target"] == pytest.approx(so.evaluate(target, so.timid_play(target, bet)), abs=1e-12)


def test_the_canonical_session_flat_one_unit_player():
    target = so.Session(bankroll=10, goal=20, hands=100, table_max=10)
    chain = chain_p_goal(target, {"type": "flat", "bet": "player"})
    assert chain["p_target"] == pytest.approx(0.25424484031207895, abs=1e-12)
    assert so.evaluate(target, so.timid_play(target)) == pytest.approx(0.25424484031207895, abs=1e-12)


@pytest.mark.parametrize(("bet", "stake"), [("player", 3), ("tie", 2)])
def test_larger_flat_stakes_agree_where_the_bankroll_stays_whole(bet, stake):
    """On player (1:1) and tie (8:1) every bankroll is a whole number of units, so the chain's cut
    of the stake to the bankroll (all-in) is the solver's whole units of the bankroll."""
    target = so.Session(bankroll=10, goal=20, hands=100, table_max=5)
    chain = chain_p_goal(target, {"type": "flat", "bet": bet, "base": stake})
    assert chain["p_target"] == pytest.approx(
        so.evaluate(target, so.timid_play(target, bet, stake)), abs=1e-12
    )


def test_an_all_in_banker_stake_is_where_they_part():
    """Flat 3 units on banker, 10 -> 15 in 30 hands: at a bankroll of 1.9 (say) the chain stakes the
    1.9 units (cut to the bankroll), the solver only whole units (1): the chain's P(goal) is higher."""
    target = so.Session(bankroll=10, goal=15, hands=30, table_max=5)
    chain = chain_p_goal(target, {"type": "flat", "bet": "banker", "base": 3})
    solver = so.evaluate(target, so.timid_play(target, "banker", 3))
    assert chain["p_target"] == pytest.approx(0.6055343896350324, abs=1e-12)
    assert solver == pytest.approx(0.6033861387402764, abs=1e-12)


def test_the_optimum_bounds_every_system_on_player():
    """On player every system's stakes are whole units within the table's limits (the solver's
    actions), so no system beats the optimum; Martingale comes within 2.2% of it here."""
    target = so.Session(bankroll=10, goal=15, hands=30, table_max=None)
    best = so.solve(target).p_goal
    classic = yaml.safe_load((ROOT / "configs" / "systems" / "classic.yaml").read_text())["systems"]
    values = {}
    for system in classic:
        if system["type"] in ("kelly",):
            continue
        entry = {**system, "bet": "player"} if "bet" in system else system
        result = chain_p_goal(target, entry)
        values[system.get("name", system["type"])] = result["p_target"]
    assert max(values.values()) <= best
    assert values["martingale"] == pytest.approx(0.6429501972361515, abs=1e-12)
    assert best == pytest.approx(0.6575260553481135, abs=1e-12)


def test_the_session_v0_systems_config_plays_the_task_and_labouchere_is_its_best_progression():
    """``configs/systems/session-v0.yaml`` (the progressions beside the agents in
    docs/results/session-agents.md) plays Session-v0's session, and its exact chain gives the page's
    figures: Labouchere reaches 0.316 of the optimum, the Martingale never reaches the goal."""
    from pb_gym import session_benchmark
    from pb_gym.experiments.evaluate.settings import StudyConfig

    config = load(ROOT / "configs" / "systems" / "session-v0.yaml", StudyConfig)
    task = session_benchmark.problem("Session-v0")
    assert config.table.unit == config.table.minimum == task.table_min == 1
    assert (config.bankroll, config.bankroll + config.win_goal) == (task.bankroll, task.goal)
    assert (config.table.maximum, config.hands, config.exact) == (task.table_max, task.hands, True)
    classic = yaml.safe_load((ROOT / "configs" / "systems" / "classic.yaml").read_text())["systems"]
    progressions = {s["type"] for s in classic if "bet" in s}
    assert {s.type for s in config.systems} == progressions
    assert all(s.bet == "player" for s in config.systems)
    optimum_p = so.solve(task).p_goal
    systems = {s.name or s.type: s for s in config.systems}
    labouchere = exact_chain.exact_system(systems["labouchere"], config)["p_target"]
    assert labouchere / optimum_p == pytest.approx(0.316, abs=5e-4)
    assert exact_chain.exact_system(systems["martingale"], config)["p_target"] == 0.0


# ------------------------------------------------------------------------------------ the study
@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("optimum") / "out"
    assert cli.main(["experiment", "optimum", SMOKE, "--out", str(out), "--json"]) == 0
    return out, json.loads((out / "optimum.json").read_text())


def test_the_smoke_study_figures(smoke):
    out, result = smoke
    assert sorted(p.name for p in out.iterdir()) == [
        "optimum.csv",
        "optimum.json",
        "optimum.md",
        "optimum.png",
    ]
    cells = {(c["goal"], c["table_max"], c["hands"]): c for c in result["cells"]}
    assert len(cells) == 8
    canonical = cells[(20, None, 30)]  # 10 -> 20, bold on player is optimal: q = P(P) / (P(P) + P(B))
    assert canonical["p_goal"] == pytest.approx(0.4931751700554462, abs=1e-12)
    assert canonical["bold"]["player"] == pytest.approx(canonical["p_goal"], abs=1e-15)
    assert canonical["start"] == {"bet": "player", "stake": 10}
    tie = cells[(20, 5, 10)]  # a maximum of 5 and 10 hands: the optimum bets the tie near the end
    assert tie["p_goal"] == pytest.approx(0.47113566241126636, abs=1e-12)
    assert tie["bold"]["player"] == pytest.approx(0.45960003997270293, abs=1e-12)
    assert tie["expected_hands"]["tie"] == pytest.approx(0.217, abs=1e-3)
    assert tie["timid"] == pytest.approx(0.0003131477480604696, abs=1e-15)  # ten wins in ten hands
    short = cells[(15, 5, 10)]["systems"]
    assert list(short) == [
        f"{s} ({b})" for s in ("flat", "martingale", "dalembert") for b in ("player", "banker")
    ]
    assert short["martingale (player)"]["p_target"] == pytest.approx(0.40477377050625346, abs=1e-12)
    assert short["martingale (banker)"]["p_target"] == pytest.approx(0.2576635225076999, abs=1e-12)
    reason = cells[(15, 5, 30)]["systems"]["martingale (banker)"]["reason"]
    assert reason.startswith("more than 20,000 states within the hand limit: all-in stakes")
    for cell in result["cells"]:  # no system beats the optimum
        assert all(e.get("p_target", 0.0) <= cell["p_goal"] + 1e-12 for e in cell["systems"].values())


def test_the_smoke_study_files(smoke):
    out, result = smoke
    rows = list(csv.DictReader((out / "optimum.csv").open()))
    assert len(rows) == 8 and rows[0]["goal"] == "15" and rows[0]["table_max"] == "5"
    assert float(rows[0]["optimum"]) == pytest.approx(0.6565441665691554, abs=1e-12)
    assert rows[1]["martingale (banker)"] == ""  # not finite
    text = (out / "optimum.md").read_text()
    assert "| 20 | none | 30 | 0.49318 | 10 on player | 0.00 | 0.49318 | 0.48267 | 0.04812 |" in text
    assert "| martingale (banker) | 4 of 8 |" in text
    assert (out / "optimum.png").read_bytes()[:4] == b"\x89PNG"


def test_the_config_lists_classic_systems():
    """configs/experiments/optimum.yaml values the systems of configs/systems/classic.yaml."""
    classic = yaml.safe_load((ROOT / "configs" / "systems" / "classic.yaml").read_text())["systems"]
    full = yaml.safe_load((ROOT / "configs" / "experiments" / "optimum.yaml").read_text())
    assert full["systems"] == classic
    config = load(str(ROOT / "configs" / "experiments" / "optimum.yaml"), optimum.OptimumConfig)
    assert len(optimum.cells(config)) == 48
    names = [name for name, _ in optimum.system_entries(config)]
    assert names[:2] == ["flat (player)", "flat (banker)"] and names[-4:] == [
        "follow_winner",
        "chop",
        "random",
        "kelly",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"goals": [10]}, "goals: goal must be above the bankroll (10) (got 10)"),
        (
            {"table_maxima": [0]},
            "table_maxima: table_max must be None (no maximum) or whole units >= table_min",
        ),
        ({"hands": [0]}, "hands: hands must be an integer >= 1 (got 0)"),
        ({"hands": [10, 10]}, "each value once; allowed: distinct integers (got [10, 10])"),
        ({"bets": ["dragon"]}, "bets: unknown bet 'dragon'; the catalog's bets are:"),
        ({"bankroll": 0}, "bankroll: Input should be greater than or equal to 1 (got 0)"),
        ({"table_min": 2}, "systems: systems.0.base: 1 unit(s) of 1 is below the table minimum 2"),
    ],
)
def test_config_errors_name_the_key(tmp_path, change, message):
    data = {**yaml.safe_load(Path(SMOKE).read_text()), **change}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as error:
        load(str(path), optimum.OptimumConfig)
    assert message in str(error.value)
