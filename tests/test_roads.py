"""The roads (pb_gym.roads): golden cases worked by hand from the rules (tests/data/roads_golden.json,
source named there), a property test against a naive second implementation over random shoes, the
vectorized tracker against the scoreboard, and the ``pb-gym roads`` command."""

import json
from pathlib import Path

import numpy as np
import pytest

from pb_gym import roads
from pb_gym.experiments import cli

GOLDEN = json.loads((Path(__file__).parent / "data" / "roads_golden.json").read_text())["cases"]


@pytest.mark.parametrize("case", GOLDEN, ids=[case["name"] for case in GOLDEN])
def test_golden_cases(case):
    board = roads.read_roads(case["outcomes"])
    data = board.to_dict()
    if "leading_ties" in case:
        assert board.leading_ties == case["leading_ties"]
    if "big_road" in case:
        assert data["big_road"] == case["big_road"]
    if "ties_on_cells" in case:
        assert data["ties"]["on_cells"] == case["ties_on_cells"]
    for name in roads.DERIVED_ROADS:
        if name in case:
            assert data[name] == case[name], name
    if "ask" in case:
        assert board.ask == case["ask"]
    if "layout" in case:
        cells = roads.layout(board.big_road)
        assert {(x, y): entry.winner for (x, y), entry in cells.items()} == {
            (x, y): w for x, y, w in case["layout"]
        }


def test_bead_plate_columns_of_six_with_ties_and_pairs():
    board = roads.read_roads(
        "BPTTBBP", banker_pairs=[1, 0, 0, 0, 0, 0, 1], player_pairs=[0, 1, 0, 0, 0, 0, 0]
    )
    assert board.to_dict()["bead_plate"] == [["Bb", "Pp", "T", "T", "B", "B"], ["Pb"]]
    with pytest.raises(ValueError, match="one flag per hand"):
        roads.read_roads("BP", banker_pairs=[True])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "outcomes: empty; allowed: a string of B"),
        ("BXP", "'X' is not allowed; allowed: B"),
        ("b p t", None),
    ],
)
def test_parse_outcomes(text, message):
    if message is None:
        assert roads.parse_outcomes(text) == ("B", "P", "T")
    else:
        with pytest.raises(ValueError, match=message):
            roads.parse_outcomes(text)


# -- a naive second implementation: the Big Road as a set of (column, row) cells rebuilt from scratch
# for every prefix, the casino's "look at the cell" form of the rules, and the first mark as "the
# road has started once cell (k+1, 2) or (k+2, 1) exists"
def naive_cells(outcomes):
    cells, column, row, last = {}, 0, 0, None
    for outcome in outcomes:
        if outcome == "T":
            continue
        if outcome == last:
            row += 1
        else:
            column, row, last = column + 1, 1, outcome
        cells[(column, row)] = outcome
    return cells, column, row


def naive_mark(cells, column, row, k):
    started = (k + 1, 2) in cells or (k + 2, 1) in cells
    if not started:
        return None
    if row == 1:

        def length(c):
            return sum(1 for (x, _) in cells if x == c)

        return "red" if length(column - 1) == length(column - 1 - k) else "blue"
    if (column - k, row) in cells:
        return "red"
    if (column - k, row - 1) in cells:
        return "blue"
    return "red"


def naive_roads(outcomes):
    marks = {name: [] for name in roads.DERIVED_ROADS}
    for end in range(1, len(outcomes) + 1):
        if outcomes[end - 1] == "T":
            continue
        cells, column, row = naive_cells(outcomes[:end])
        for name, k in roads.DERIVED_ROADS.items():
            mark = naive_mark(cells, column, row, k)
            if mark is not None:
                marks[name].append(mark)
    columns = {}
    for (x, _), w in sorted(naive_cells(outcomes)[0].items()):
        columns.setdefault(x, []).append(w)
    return [columns[x] for x in sorted(columns)], marks


def random_shoes(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 90))
        yield "".join(rng.choice(["B", "P", "T"], size=n, p=[0.458, 0.446, 0.096]))


def test_roads_match_a_naive_implementation_on_random_shoes():
    for outcomes in random_shoes(400, seed=20261201):
        board = roads.read_roads(outcomes)
        columns, marks = naive_roads(outcomes)
        assert board.to_dict()["big_road"] == columns, outcomes
        for name in roads.DERIVED_ROADS:
            assert list(board.derived[name]) == marks[name], (name, outcomes)
        # the ask road is what one more banker / player would add; the two are always opposite
        for name in roads.DERIVED_ROADS:
            after_banker, after_player = board.ask["B"][name], board.ask["P"][name]
            assert (after_banker is None) == (after_player is None)
            assert after_banker is None or after_banker != after_player
        for winner in ("B", "P"):
            _, after = naive_roads(outcomes + winner)
            for name in roads.DERIVED_ROADS:
                added = after[name][len(marks[name]) :]
                assert board.ask[winner][name] == (added[0] if added else None), (winner, outcomes)
        # every display cell on the board, none twice, one per entry, each column starting at the top
        cells = roads.layout(board.big_road)
        assert len(cells) == sum(len(c) for c in board.big_road)
        assert all(0 <= y < roads.ROWS for _, y in cells)


def test_tracker_matches_the_scoreboard_hand_by_hand():
    shoes = list(random_shoes(64, seed=7))
    tracker = roads.RoadTracker(len(shoes), memory=6)
    code = {"B": 0, "P": 1, "T": 2}
    value = {"red": 1, "blue": -1, None: 0}
    for hand in range(max(map(len, shoes))):
        winners = np.array([code[s[hand]] if hand < len(s) else -1 for s in shoes])
        before = tracker.ask()
        tracker.record(winners)
        for t, s in enumerate(shoes):
            if hand >= len(s):
                continue
            board = roads.read_roads(s[: hand + 1])
            previous = roads.read_roads(s[:hand]) if hand else None
            if s[hand] != "T" and previous is not None:
                side = code[s[hand]]
                expected = [value[previous.ask[s[hand]][n]] for n in roads.DERIVED_ROADS]
                assert before[t, side].tolist() == expected
            assert tracker.lengths[t, 0] == (board.column_lengths[-1] if board.big_road else 0)
            assert tracker.columns[t] == len(board.big_road)
            big = [1 if e.winner == "B" else -1 for c in board.big_road for e in c][-6:]
            assert tracker.history[t, 0, 6 - len(big) :].tolist() == big
            for j, name in enumerate(roads.DERIVED_ROADS, start=1):
                marks = [value[m] for m in board.derived[name]][-6:]
                assert tracker.history[t, j, 6 - len(marks) :].tolist() == marks
                assert not tracker.history[t, j, : 6 - len(marks)].any()
    tracker.restart(np.ones(len(shoes), dtype=bool))
    assert not tracker.history.any() and not tracker.columns.any()


def test_scoreboard_text():
    text = roads.scoreboard_text(roads.read_roads("TBBPTTPBBBBBBBB"))
    lines = text.splitlines()
    assert lines[0] == "Bead plate (15 hands)"
    assert "Big Road (3 columns, 1 leading tie(s); a digit: ties on the cell)" in lines
    big = lines.index("Big Road (3 columns, 1 leading tie(s); a digit: ties on the cell)")
    assert lines[big + 1].split() == ["B", "P2", "B", ".", "."]
    assert lines[big + 6].split() == [".", ".", "B", "B", "B"]  # eight B's: six down, two along
    assert lines[-2].startswith("  if banker:") and lines[-1].startswith("  if player:")


def test_cli_roads_json_text_png_and_errors(capsys, tmp_path):
    assert cli.main(["roads", "BBPTPB", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["big_road"] == [["B", "B"], ["P", "P"], ["B"]]
    assert data["ties"] == {"leading": 0, "on_cells": [[1, 0, 1]]}
    assert data["big_eye_boy"] == ["red", "red"]  # (2, 2) and (3, 1): columns 1 and 2 both two long
    assert data["bead_plate"] == [["B", "B", "P", "T", "P", "B"]]
    assert set(data["ask_road"]) == {"B", "P"}
    png = tmp_path / "board.png"
    assert cli.main(["roads", "PPPPPPPPBT", "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Big Road" in capsys.readouterr().out
    for bad, message in (("BQP", "'Q' is not allowed"), ("", "empty")):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["roads", bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and err[0].startswith("pb-gym roads: error:")


def test_the_env_renders_the_roads_of_its_shoe_as_the_scoreboard_does():
    # one deck: a shoe lasts about 8 hands, so the render must start the roads afresh with each shoe
    from pb_gym import PuntoBancoEnv
    from pb_gym.envs.render import ROAD_COLUMNS
    from pb_gym.rules import Rules

    env = PuntoBancoEnv(render_mode="ansi", rules=Rules(decks=1, cut_card=8), max_hands=None)
    env.reset(seed=11)
    hands: list[tuple[str, bool, bool]] = []
    shuffles = 0
    for _ in range(60):
        _, _, _, _, info = env.step(env.action_index("banker", 0))
        if info["shuffled"]:
            hands, shuffles = [], shuffles + 1
        hands.append(("BPT"[info["winner"]], info["banker_pair"], info["player_pair"]))
        results, banker_pairs, player_pairs = zip(*hands, strict=True)
        expected = roads.scoreboard_text(roads.read_roads(results, banker_pairs, player_pairs), ROAD_COLUMNS)
        assert env.render().endswith(expected)
    assert shuffles >= 3
