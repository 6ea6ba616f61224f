"""Road patterns as betting systems (pb_gym.agents.patterns): each pattern's decision on hand-written
sequences, the user-written rules and their errors, the YAML schema, and a short evaluate run."""

import numpy as np
import pytest

from pb_gym import roads
from pb_gym.agents import patterns

CODE = {"B": 0, "P": 1, "T": 2}
SIDE = {0: "B", 1: "P", -1: "-"}


def decisions(pattern, sequences, **options):
    """The side the pattern bets after each sequence (one table per sequence)."""
    tracker = roads.RoadTracker(len(sequences), memory=patterns.MEMORY)
    for hand in range(max(map(len, sequences))):
        tracker.record(np.array([CODE[s[hand]] if hand < len(s) else -1 for s in sequences]))
    return "".join(SIDE[int(side)] for side in patterns.decide(pattern, tracker, **options))


@pytest.mark.parametrize(
    ("pattern", "options", "cases"),
    [
        # after three in a row (ties are no decision), follow the streak
        (
            "streak",
            {"after": 3},
            {"": "-", "BB": "-", "BBB": "B", "PTPTP": "P", "BPPPPPPPP": "P", "PPPB": "-"},
        ),
        # after three alternations, bet the other side; after one, always the other side
        ("chop", {"after": 3}, {"BPB": "P", "PBTP": "B", "BBP": "-", "BP": "-"}),
        ("chop", {"after": 1}, {"B": "P", "BBBP": "B", "": "-"}),
        # the current column against the previous one: shorter -> same, as long -> other, longer -> none
        ("copy_column", {}, {"BBBP": "P", "BBBPP": "P", "BBBPPP": "B", "BBPPP": "-", "BBB": "-"}),
        # BB-PP: after a column of two, bet the next column is two as well
        ("double", {}, {"BBP": "P", "BBPP": "B", "BBPPP": "-", "BPB": "-", "BBBP": "-"}),
    ],
)
def test_pattern_decisions(pattern, options, cases):
    sequences = list(cases)
    got = decisions(pattern, sequences, **options)
    assert dict(zip(sequences, got, strict=True)) == cases


def test_ask_road_patterns_follow_the_ask_road():
    # BPB: after a banker the roads mark blue, blue, none; after a player red, red, none
    # (tests/data/roads_golden.json): the majority says player, the three do not agree
    assert decisions("ask_majority", ["BPB"]) == "P"
    assert decisions("ask_unanimous", ["BPB"]) == "-"
    for outcomes in ("BPBPBPBBPPBPB", "BBPPBBPPBBPP", "BPPBBBPBPPPB", "PPPPPPBPBBPBP"):
        board = roads.read_roads(outcomes)
        reds = {w: sum(board.ask[w][n] == "red" for n in roads.DERIVED_ROADS) for w in "BP"}
        majority = "B" if reds["B"] > reds["P"] else "P" if reds["P"] > reds["B"] else "-"
        unanimous = "B" if reds["B"] == 3 else "P" if reds["P"] == 3 else "-"
        assert decisions("ask_majority", [outcomes]) == majority, outcomes
        assert decisions("ask_unanimous", [outcomes]) == unanimous, outcomes
    # a long alternation: every derived road repeats the chop, so all three mark red for a chop
    assert decisions("ask_unanimous", ["BPBPBPBPB"]) == "P"


def test_user_rules_first_match_decides():
    rules = patterns.check_rules(
        [
            {"when": {"big_road": ["B", "B"], "big_eye_boy": ["red"]}, "bet": "opposite"},
            {"when": {"big_road": ["P"]}, "bet": "same"},
            {"when": {"big_road": ["B"]}, "bet": "none"},
        ]
    )
    # BPBB: the Big Eye Boy's last mark is blue (column 2 was one long): the first rule does not match
    # BBPBB: ... columns 1 and 2 unequal, then (3, 2) against column 2 of one entry: blue as well
    # PPBB: (2, 2): column 1 is two long -> red, the first rule matches
    got = decisions("rules", ["PPBB", "BPBB", "BBP", "T"], rules=rules)
    assert got == "P" + "-" + "P" + "-"


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (
            [{"when": {"small_road": ["green"]}, "bet": "same"}],
            "rules.0.when.small_road: 'green' is not allowed; allowed: red, blue",
        ),
        (
            [{"when": {"big_road": ["B"]}, "bet": "same"}, {"when": {"bead": ["B"]}, "bet": "same"}],
            "rules.1.when.bead: unknown road; allowed: big_road, big_eye_boy, small_road, cockroach_pig",
        ),
        (
            [{"when": {"big_road": ["B"]}, "bet": "tie"}],
            "rules.0.bet: 'tie' is not allowed; allowed: banker, player, same, opposite, none",
        ),
        ([{"when": {"big_road": ["B"] * 9}, "bet": "same"}], "rules.0.when.big_road: a list of 1 to 8"),
        ([{"when": {"big_road": ["B"]}, "bet": "same", "then": 1}], "rules.0.then: unknown key"),
        ([], "rules: a non-empty list"),
    ],
)
def test_user_rules_errors_name_the_rule(rules, message):
    with pytest.raises(ValueError) as error:
        patterns.check_rules(rules)
    assert message in str(error.value)


def test_yaml_schema_and_errors():
    from pb_gym.experiments.evaluate.settings import StudyConfig, make_system

    good = StudyConfig.model_validate(
        {
            "systems": [
                {
                    "type": "road_pattern",
                    "pattern": "streak",
                    "after": 2,
                    "stake": {"type": "martingale", "recovering": True},
                },
                {
                    "type": "road_pattern",
                    "pattern": "rules",
                    "rules": [{"when": {"cockroach_pig": ["blue"]}, "bet": "banker"}],
                },
            ]
        }
    )
    system = make_system(good.systems[0])
    assert system.name == "road_pattern (streak)" and system.progression.key == "martingale"
    assert system.progression.recovering is True
    for bad, message in (
        ({"type": "road_pattern", "pattern": "zigzag"}, "pattern"),
        ({"type": "road_pattern", "pattern": "streak", "after": 9}, "less than or equal to 8"),
        ({"type": "road_pattern", "stake": {"type": "kelly"}}, "stake.type: 'kelly' is not allowed"),
        (
            {"type": "road_pattern", "stake": {"type": "paroli", "wins_to_reset": 0}},
            "stake.wins_to_reset: Input should be greater than or equal to 1",
        ),
        ({"type": "road_pattern", "stake": {"type": "flat", "base": 2}}, "stake.base: set on the pattern"),
        (
            {
                "type": "road_pattern",
                "pattern": "rules",
                "rules": [{"when": {"big_road": ["X"]}, "bet": "same"}],
            },
            "rules.0.when.big_road: 'X' is not allowed; allowed: B, P",
        ),
    ):
        with pytest.raises(ValueError) as error:
            StudyConfig.model_validate({"systems": [bad]})
        assert message in str(error.value), (bad, str(error.value))
    with pytest.raises(ValueError, match="rules: needed with pattern: rules"):
        patterns.RoadPattern(pattern="streak", rules=[{"when": {"big_road": ["B"]}, "bet": "same"}])


def test_a_pattern_bets_only_when_it_says_and_roads_restart_each_shoe():
    from pb_gym.experiments import evaluate
    from pb_gym.experiments.common import scale
    from pb_gym.experiments.evaluate.settings import StudyConfig

    config = StudyConfig.model_validate(
        {
            "name": "patterns-smoke",
            "sessions": 64,
            "hands": 200,
            "seed": 5,
            "bankroll": 100000,
            "table": {"unit": 1, "minimum": 1, "maximum": 1000},
            "systems": [
                {"type": "road_pattern", "pattern": "streak", "after": 8},
                {"type": "road_pattern", "pattern": "chop", "after": 1},
            ],
        }
    )
    result = evaluate.run_chunk(config.model_dump(), scale.plan(64, 64, 5)[0])
    streak, chop = result["systems"]
    # chop after one decision bets every hand but the first of each shoe's first decision
    assert chop["bets"] > 0.95 * 64 * 200
    # after eight in a row: a column reaches 8 about once in 2^7 / 0.9 columns
    assert 0 < streak["bets"] < 0.03 * 64 * 200


def test_exact_evaluate_gives_a_reason_for_road_patterns():
    """A pattern reads the shoe's whole sequence of results: no finite chain (a reason, not a wrong
    exact figure from a chain that never sees the roads)."""
    from pb_gym.experiments.evaluate import exact_chain as exact_systems
    from pb_gym.experiments.evaluate.settings import StudyConfig

    config = StudyConfig.model_validate(
        {"sessions": 10, "hands": 20, "systems": [{"type": "road_pattern", "pattern": "streak", "after": 2}]}
    )
    result = exact_systems.exact_system(config.systems[0], config)
    assert result == {"reason": exact_systems.NOT_FINITE["road_pattern"]}
    assert "reads the roads" in result["reason"]
