"""The pb-gym command line: JSON shapes and values, text output, and argument errors."""

import importlib.util
import json
import subprocess
import sys

import pytest

from pb_gym.experiments import cli
from pb_gym.simulate import Z95

from repo_paths import ROOT  # noqa: E402


def run_json(capsys, *argv):
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_odds_json_full_shoe(capsys):
    out = run_json(capsys, "odds", "--decks", "8")
    assert out["cards"] == 416
    # published 8-deck figures (Wizard of Odds, "Baccarat"; tests/data/published_figures.json)
    assert set(out["probabilities"]) >= {"banker", "player", "tie"}
    # every bet of the catalog, the seven spots first
    from pb_gym import catalog

    assert tuple(out["ev"]) == catalog.bet_names()
    assert tuple(out["ev"])[:7] == (
        "banker",
        "player",
        "tie",
        "player_pair",
        "banker_pair",
        "dragon7",
        "panda8",
    )
    # published: Dragon Bonus player 2.6517%, banker 9.3731% (Wizard of Odds; tests/data/catalog_figures.json)
    assert round(-100 * out["ev"]["dragon_bonus_player"], 4) == 2.6517
    assert round(-100 * out["ev"]["dragon_bonus_banker"], 4) == 9.3731
    assert round(-100 * out["ev"]["banker"], 4) == 1.0579
    assert round(-100 * out["ev"]["player"], 4) == 1.2351
    assert round(-100 * out["ev"]["tie"], 4) == 14.3596
    assert round(out["probabilities"]["banker"], 6) == 0.458597


def test_odds_variants_and_ranks(capsys):
    # published: 6-deck tie at 9:1 (Wizard of Odds, "Baccarat"), 8-deck EZ banker ("EZ Baccarat")
    assert round(-100 * run_json(capsys, "odds", "--decks", "6", "--tie-pays", "9")["ev"]["tie"], 4) == 4.9313
    assert round(-100 * run_json(capsys, "odds", "--variant", "ez")["ev"]["banker"], 4) == 1.0183
    # only ten-valued cards left: every hand is a 0-0 tie
    out = run_json(capsys, "odds", "--ranks", "0,0,0,0,0,0,0,0,0,10,10,10,10")
    assert out["cards"] == 40 and out["probabilities"]["tie"] == 1.0 and out["ev"]["tie"] == 8.0
    full = ",".join(["32"] * 13)
    by_rank, shoe = run_json(capsys, "odds", "--ranks", full)["ev"], run_json(capsys, "odds")["ev"]
    # a composition by rank prices every bet but the suited ones (a full shoe's suits are known)
    assert by_rank == {name: ev for name, ev in shoe.items() if name in by_rank}
    assert set(shoe) - set(by_rank) == {"perfect_pair", "perfect_pair_v1"}


def test_odds_bets_selects_catalog_bets_and_a_bad_name_lists_the_allowed_ones(capsys):
    out = run_json(capsys, "odds", "--bets", "lucky6, banker,lucky6", "--variant", "no-commission")
    assert list(out["ev"]) == ["lucky6", "banker"]
    assert round(-100 * out["ev"]["banker"], 4) == 1.4581  # published no-commission banker, 8 decks
    assert round(out["ev"]["lucky6"], 6) == -0.116985  # Wizard of Odds, "Lucky 6"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["odds", "--bets", "banker,dragon_bonus"])
    assert exit_info.value.code == 2
    assert (
        "--bets: unknown bet 'dragon_bonus'; allowed: all, or comma-separated names from banker, "
        "player, tie, player_pair,"
    ) in capsys.readouterr().err


def test_odds_text(capsys):
    assert cli.main(["odds", "--decks", "8"]) == 0
    text = capsys.readouterr().out
    assert "8-deck shoe (416 cards)" in text and "-1.0579%" in text and "dragon7" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["odds", "--decks", "9"], "--decks=9 is not allowed; allowed: an integer from 1 to 8"),
        (["odds", "--ranks", "1,2,3"], "--ranks takes 13 comma-separated counts"),
        (["odds", "--ranks", "1,1,1,1,1,0,0,0,0,0,0,0,0"], "at least 6 cards"),
        (["odds", "--decks", "6", "--ranks", ",".join(["4"] * 13)], "not allowed with argument --decks"),
        (["odds", "--variant", "french"], "invalid choice: 'french'"),
        (["simulate", "--hands", "0"], "--hands=0 is not allowed; allowed: an integer >= 1"),
        (["simulate", "--tables", "-3"], "--tables=-3 is not allowed"),
        (
            ["experiment", "leaks", str(ROOT / "configs/experiments/leaks-smoke.yaml"), "--backend=threads"],
            "backend='threads': the leaks study runs serially; allowed: serial",
        ),
    ],
)
def test_argument_errors_exit_2_with_a_clear_message(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_simulate_json(capsys):
    out = run_json(capsys, "simulate", "--decks", "8", "--hands", "300000", "--seed", "3", "--tables", "1000")
    assert out["hands"] == 300000
    assert sum(out["wins"].values()) == 300000
    assert sum(out["outcomes"].values()) == 300000
    for bet, row in out["bets"].items():
        lo, hi = row["ci95"]
        assert lo < row["return_per_unit"] < hi
        assert row["exact_within_ci"] == (lo <= row["exact_ev"] <= hi)
        # the realized return is within 5 standard errors of the exact EV (false alarm ~6e-7)
        standard_error = (hi - lo) / 2 / Z95
        assert abs(row["return_per_unit"] - row["exact_ev"]) < 5 * standard_error, bet
    assert out["bets"]["banker"]["exact_ev"] == pytest.approx(-0.010579, abs=5e-7)
    # same seed, same hands
    again = run_json(capsys, "simulate", "--hands", "300000", "--seed", "3", "--tables", "1000")
    assert again["wins"] == out["wins"]


def test_simulate_partial_last_round_counts_exactly(capsys):
    out = run_json(capsys, "simulate", "--hands", "1001", "--tables", "100", "--seed", "1")
    assert sum(out["wins"].values()) == 1001


def test_bench_compile_cost_compiles_with_an_empty_cache_and_loads_with_a_warm_one(capsys):
    """The compile cost of a first deal in new processes: with an empty numba cache every kernel is
    compiled (several seconds of CPU here), with the cache that run left they are loaded (under one
    second idle). How many times the warm run's CPU time the cold one's is, is the benchmark's figure
    (it varies with the machine and its load); the test checks that both are measured and printed."""
    from pb_gym import bench

    figures = bench.compile_cost(("deal",))
    assert figures["deal_cold_cpu_s"] > 0 and figures["deal_warm_cpu_s"] > 0
    bench.print_compile_cost(figures)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("compile cost (a new process each; load average ")
    assert lines[1].startswith("  the engine's first init + deal, empty numba cache") and "s CPU" in lines[1]
    with pytest.raises(ValueError, match="compile_cost: unknown use 'gpu'; allowed: env, deal"):
        bench.compile_cost(("gpu",))


def test_bench_quick_json(capsys, tmp_path):
    saved = tmp_path / "before.json"
    out = run_json(capsys, "bench", "--quick", "--save-baseline", str(saved))
    assert out["engine_hands_per_s"] > 0
    assert set(out["compile"]) == {
        "load_average",
        "env_warm_wall_s",
        "env_warm_cpu_s",
        "deal_warm_wall_s",
        "deal_warm_cpu_s",
    }
    for batch, rate in out["engine_hands_per_s_by_batch"].items():  # beside the numpy lockstep dealer
        assert out["engine_vs_lockstep_by_batch"][batch] == pytest.approx(
            rate / out["lockstep_hands_per_s_by_batch"][batch]
        )
    # a later run prints each throughput with its ratio to the saved one (here: itself, 1.00x)
    from pb_gym import bench

    assert bench.load_baseline(saved) == json.loads(json.dumps(out))
    bench.print_figures(out, bench.load_baseline(saved))
    lines = capsys.readouterr().out.splitlines()
    engine_row = next(line for line in lines if line.startswith("engine, 4,096 tables (hands/s)"))
    assert engine_row.rstrip().endswith("(1.00x)")
    assert any(line.startswith("  engine / numpy lockstep") for line in lines)
    (tmp_path / "bad.json").write_text('{"engine": 1}')
    with pytest.raises(ValueError, match=r"bad.json: not a saved bench \(pb-gym bench --save-baseline\)"):
        bench.load_baseline(tmp_path / "bad.json")
    assert out["engine_vs_python_loop"] == pytest.approx(
        out["engine_hands_per_s"] / out["python_loop_hands_per_s"]
    )
    assert out["exact_compositions_per_s"] > 0
    assert out["vector_env_steps_per_s"] > 0 and out["sync_vector_env_steps_per_s"] > 0
    assert out["vector_vs_sync_ratio"] == pytest.approx(
        out["vector_env_steps_per_s"] / out["sync_vector_env_steps_per_s"]
    )
    evaluate = out["evaluate"]
    assert (
        evaluate["evaluate_progression_ns_per_seat_hand"] > 0
        and evaluate["evaluate_kelly_ns_per_seat_hand"] > 0
    )
    assert evaluate["evaluate_alone_vs_stacked"] == pytest.approx(
        evaluate["evaluate_progression_alone_ns_per_seat_hand"]
        / evaluate["evaluate_progression_ns_per_seat_hand"]
    )


def test_console_script_help():
    for command in ("odds", "simulate", "bench"):
        done = subprocess.run(
            [sys.executable, "-m", "pb_gym.experiments.cli", command, "--help"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "--json" in done.stdout


def test_the_console_script_exits_with_mains_status():
    for argv, status in ((["odds", "--decks", "8"], 0), (["odds", "--decks", "0"], 2)):
        done = subprocess.run([sys.executable, "-m", "pb_gym.experiments.cli", *argv], capture_output=True)
        assert done.returncode == status, done.stderr


def test_experiment_help_describes_every_study(capsys):
    with pytest.raises(SystemExit):
        cli.main(["experiment", "--help"])
    text = capsys.readouterr().out
    assert set(cli.studies.STUDIES) == {
        "counting",
        "atlas",
        "ruin",
        "roads",
        "leaks",
        "optimum",
        "procedures",
        "benchmark",
    }
    for name, description in cli.studies.STUDIES.items():
        first_words = " ".join(description.split()[:4])
        assert f"  {name}" in text and first_words in " ".join(text.split()), name
        # each study's module is there to import (pb-gym experiment benchmark: regret_table)
        module = f"pb_gym.experiments.{cli.studies.STUDY_MODULES.get(name, name)}"
        assert importlib.util.find_spec(module) is not None, module


HEAVY = (
    "numba",
    "torch",
    "yaml",
    "pydantic",
    "matplotlib",
    "pb_gym.engine",
    "pb_gym.exact",
    "pb_gym.rules",
    "pb_gym.envs.punto_banco",
    "pb_gym.agents.systems",
    "pb_gym.experiments.evaluate",
)


def test_the_console_script_module_loads_only_what_registering_the_envs_needs():
    """Every command starts by importing ``pb_gym.experiments.cli``: that import stays cheap. Importing
    the package registers its Gymnasium ids (gymnasium and numpy load); the heavy ones (numba, the
    engine, the studies' libraries) load inside ``main``, for the command that needs them."""
    code = f"import sys, pb_gym.experiments.cli; print(sorted({{m for m in sys.modules}} & set({HEAVY!r})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
