"""``pb-gym optimum``: the exact optimum of a session from the command line, its text, its errors."""

import json

import pytest

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.experiments import cli

CANONICAL = ["optimum", "--bankroll", "10", "--goal", "20", "--table-max", "10", "--hands", "100"]


def run_json(capsys, *argv):
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_canonical_session_is_won_by_bold_play_on_player(capsys):
    out = run_json(capsys, *CANONICAL, "--bets", "banker,player,tie")
    p = exact.odds(R.full_shoe(8))["probabilities"]
    q = p["player"] / (p["player"] + p["banker"])  # one bold player bet, pushes repeated
    assert out["p_goal"] == pytest.approx(0.4931751700554462, abs=1e-12)
    assert out["p_goal"] == pytest.approx(q, abs=1e-12)
    assert out["start"] == {"bet": "player", "stake": 10}
    assert out["bold_play"]["player"] == pytest.approx(out["p_goal"], abs=1e-15)
    assert out["bold_play"]["banker"] == pytest.approx(0.48267105515298936, abs=1e-12)
    assert out["timid_play"] == {"bet": "player", "stake": 1, "p_goal": pytest.approx(0.25424484031207895)}
    assert out["session"] == {
        "hands": 100,
        "table_min": 1,
        "table_max": 10,
        "decks": 8,
        "bankroll": 10,
        "goal": 20,
        "bets": ["banker", "player", "tie"],
    }
    assert out["ticks_per_unit"] == 20  # the banker's 19:20
    # a push repeats the state, a loss ends it: every hand left holds bankroll 10 alone
    assert list(out["policy"]) == [str(h) for h in range(100, 0, -1)]
    assert out["policy"]["1"] == [{"from": 10, "to": 10, "bet": "player", "stake": 10}]


def test_the_text_report(capsys):
    assert cli.main(CANONICAL) == 0
    text = capsys.readouterr().out
    assert "optimal play                         0.493175170055" in text
    assert "bold play on player                  0.493175170055" in text
    assert "bold play on banker                  0.482671055153" in text
    assert "timid play (flat 1 unit on player)   0.254244840312" in text
    assert "Start: 10 on player" in text
    assert "    100-1 | 10: 10 on player" in text  # one row: the same action with every hand left
    assert max(len(line) for line in text.splitlines()) <= 96


def test_session_v0s_instance_opens_with_a_tie_bet(capsys):
    argv = ["optimum", "--bankroll", "20", "--goal", "60", "--table-max", "5", "--hands", "30"]
    out = run_json(capsys, *argv)
    assert out["p_goal"] == pytest.approx(0.28291641706459186, abs=1e-12)
    assert out["bold_play"]["player"] == pytest.approx(0.11158790838680, abs=1e-12)
    assert out["timid_play"]["p_goal"] == 0.0  # 40 units in 30 one-unit hands: out of reach
    assert out["start"] == {"bet": "tie", "stake": 5}
    assert out["policy"]["29"] == [{"from": 15, "to": 15, "bet": "player", "stake": 5}]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert "Start: 5 on tie" in lines
    # the first rows, a line for those left out, the last row (wrapped under 96 columns)
    assert lines[lines.index("       30 | 20: 5 on tie") + 4] == (
        "  ... 18 more row(s), 19 to 2 hands left (--json prints every row)"
    )
    assert lines[-4].startswith("        1 | 3-16: sit out; 20-27: 5 on tie; 29-34: 4 on tie;")
    assert max(len(line) for line in lines) <= 96


def test_all_states_and_other_rules(capsys):
    out = run_json(
        capsys,
        "optimum",
        "--bankroll",
        "3",
        "--goal",
        "5",
        "--hands",
        "2",
        "--bets",
        "player",
        "--states",
        "all",
    )
    assert out["ticks_per_unit"] == 1 and out["states"] == "all"
    # 2 hands left: 1 cannot reach 5 (1, 2, 4), 2 stakes 1 (then 3 stakes 2), 3 stakes 2, 4 stakes 1
    assert out["policy"]["2"] == [
        {"from": 1, "to": 1, "bet": None, "stake": 0},
        {"from": 2, "to": 2, "bet": "player", "stake": 1},
        {"from": 3, "to": 3, "bet": "player", "stake": 2},
        {"from": 4, "to": 4, "bet": "player", "stake": 1},
    ]
    assert out["policy"]["1"][0] == {"from": 1, "to": 2, "bet": None, "stake": 0}
    nine = run_json(capsys, *CANONICAL, "--tie-pays", "9", "--decks", "6", "--bets", "tie")
    # the tie alone at 9:1 (6 decks): one unit at a time beats bold play (two units, then more)
    assert nine["session"]["decks"] == 6 and nine["start"] == {"bet": "tie", "stake": 1}
    assert nine["p_goal"] == pytest.approx(0.4143521274211215, abs=1e-12)
    assert nine["bold_play"] == {"tie": pytest.approx(0.39315465818273204, abs=1e-12)}
    assert nine["timid_play"]["p_goal"] == pytest.approx(0.399333556303, abs=1e-12)


AMOUNT = "allowed: a number of units, an integer or a decimal on the bankroll lattice (e.g. 10.5)"
LATTICE = "must be on the lattice of 1/20 unit (the payouts of banker, player, tie)"
ERRORS = [
    (["--goal", "10"], "--goal must be above --bankroll (10) (got 10)"),
    (["--bets", "banker,dragon"], "--bets: unknown bet 'dragon'; the catalog's bets are: banker, player,"),
    (
        ["--bets", ","],
        "--bets: no bet named; allowed: comma-separated catalog names (pb-gym odds lists them)",
    ),
    (
        ["--table-min", "3", "--table-max", "2"],
        "--table-max must be none (no maximum) or whole units >= --table-min (3) (got 2)",
    ),
    (["--hands", "0"], "--hands must be an integer >= 1 (got 0)"),
    (["--bankroll", "10.01"], f"--bankroll {LATTICE} (got 10.01)"),
    (
        ["--bets", "player", "--goal", "20.5"],
        "--goal must be on the lattice of 1/1 unit (the payouts of player)",
    ),
    (
        ["--goal", "20000", "--hands", "10000"],
        "--hands must be fewer or --goal smaller (4,000,410,001 value cells, above 20,000,000)",
    ),
    (["--table-min", "0"], "--table-min must be a whole number of units >= 1 (got 0)"),
    (["--bankroll", "0.5"], "--bankroll must be >= --table-min (1) (got 0.5)"),
    (["--decks", "9"], "--decks=9 is not allowed; allowed: an integer from 1 to 8"),
    (["--bankroll", "abc"], f"argument --bankroll: 'abc' is not allowed; {AMOUNT}"),
    (["--goal", "inf"], f"argument --goal: 'inf' is not allowed; {AMOUNT}"),
    (
        ["--table-max", "x"],
        "argument --table-max: 'x' is not allowed; allowed: none (no maximum) or a whole number of units",
    ),
    (["--hands", "1.5"], "argument --hands: '1.5' is not allowed; allowed: an integer"),
]


@pytest.mark.parametrize(("options", "message"), ERRORS)
def test_bad_arguments_are_one_line_naming_the_option(capsys, options, message):
    argv = ["optimum", "--bankroll", "10", "--goal", "20", "--hands", "10", *options]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith(f"pb-gym optimum: error: {message}")


def test_the_help_lists_the_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "the exact optimal play of a session" in capsys.readouterr().out
