"""The roads (pb_gym.roads): golden cases worked by hand from the rules (tests/data/roads_golden.json,
source named there), a property test against a naive second implementation over random shoes, the
vectorized tracker against the scoreboard, and the ``pb-gym roads`` command."""

import json

import numpy as np
import pytest

from pb_gym import roads
from pb_gym.experiments import cli

from repo_paths import DATA  # noqa: E402

GOLDEN = json.loads((DATA / "roads_golden.json").read_text())["cases"]


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


# the full 8-deck shoe's exact P(banker), P(player), P(tie) (pb_gym.exact; as published, to six places,
# in tests/data/published_figures.json)
SHOE_ODDS = (0.458597423, 0.446246609, 0.095155968)


def _geometric(stay: float, longest: int) -> np.ndarray:
    """P(a column has length 1..longest) when the same side wins again with probability ``stay``."""
    return stay ** np.arange(longest) * (1 - stay)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("banker", [SHOE_ODDS[0] / (SHOE_ODDS[0] + SHOE_ODDS[1]), 0.7])
def test_the_red_share_of_independent_hands_is_the_rules_expected_marks(banker, k):
    """The closed form against the derivation rule itself (``derived_mark``): the expected blue marks
    of a banker and of a player column, summed over every pair of the column lengths the marks
    depend on (geometric laws, lengths up to 50: the tail left out is below 1e-7)."""
    longest = 50
    side = {0: banker, 1: 1 - banker}  # the chance that the side of a column wins again
    c = k + 2  # column c's row-1 mark reads columns c-1 and 1 (= c-1-k); its rows down read column 2
    blues = marks = 0.0
    for own in (0, 1):
        other = 1 - own
        law = {s: _geometric(side[s], longest) for s in (0, 1)}
        first = own if (k + 1) % 2 == 0 else other  # the side of column c-1-k
        down = own if k % 2 == 0 else other  # the side of column c-k
        for before, p_before in enumerate(law[other], start=1):  # column c-1
            for oldest, p_oldest in enumerate(law[first], start=1):  # column c-1-k
                lengths = [oldest] + [1] * (c - 3) + [before, 1]
                blues += p_before * p_oldest * (roads.derived_mark(lengths, c, 1, k) == roads.BLUE)
        for earlier, p_earlier in enumerate(law[down], start=1):  # column c-k
            for length, p_length in enumerate(law[own], start=1):  # column c
                lengths = [1, earlier] + [1] * (c - 3) + [length]
                down_blues = sum(
                    roads.derived_mark(lengths, c, r, k) == roads.BLUE for r in range(2, length + 1)
                )
                blues += p_earlier * p_length * down_blues
        marks += 1 / (1 - side[own])
    assert roads.red_share_independent(banker, 1 - banker, k) == pytest.approx(1 - blues / marks, abs=1e-6)


def test_the_red_share_of_independent_hands_has_its_closed_form_values():
    p = SHOE_ODDS[0] / (SHOE_ODDS[0] + SHOE_ODDS[1])
    q = 1 - p
    odd = 1 - 3 * p * q * (1 - 2 * p * q) / (1 - p * q)
    even = 1 - 3 * p * q * (p / (1 + p) + q / (1 + q))
    shares = [roads.red_share_independent(*SHOE_ODDS[:2], k) for k in (1, 2, 3)]
    assert shares == [
        pytest.approx(odd, rel=1e-15),
        pytest.approx(even, rel=1e-15),
        pytest.approx(odd, rel=1e-15),
    ]
    assert [round(100 * s, 4) for s in shares] == [50.0031, 50.0114, 50.0031]
    assert roads.red_share_independent(0.4, 0.4, 1) == roads.red_share_independent(0.4, 0.4, 2) == 0.5
    with pytest.raises(ValueError, match="k=0 is not allowed"):
        roads.red_share_independent(0.5, 0.5, 0)


@pytest.mark.parametrize("odds", [SHOE_ODDS, (0.55, 0.30, 0.15)])
def test_the_tracker_on_independent_hands_gives_the_exact_red_share(odds):
    """2,000 tables of 2,000 independent hands each (ties included: they make no mark), through the
    tracker the roads study uses: each road's red share within 3.29 standard errors (99.9%) of the
    closed form, the SE over tables (marks within a table are correlated, tables independent). At
    the shoe's odds the SE is about 0.03 points, so a red share of 50.13% would fail."""
    tables, hands = 2_000, 2_000
    rng = np.random.default_rng(11)
    tracker = roads.RoadTracker(tables)
    red = np.zeros((tables, 3))
    made = np.zeros((tables, 3))
    for _ in range(hands):
        tracker.record(rng.choice(3, size=tables, p=odds))
        red += tracker.made == 1
        made += tracker.made != 0
    for j, k in enumerate(roads.DERIVED_ROADS.values()):
        share = red[:, j].sum() / made[:, j].sum()
        residual = red[:, j] - share * made[:, j]
        se = np.sqrt(tables / (tables - 1) * np.sum(residual**2)) / made[:, j].sum()
        assert abs(share - roads.red_share_independent(odds[0], odds[1], k)) < 3.29 * se, k
        if odds == SHOE_ODDS:
            assert se < 0.0004
