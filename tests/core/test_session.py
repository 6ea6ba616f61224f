"""The table session (pb_gym.session) and the environments built on it."""

import json

import pytest

from golden_env import GOLDEN, SINGLE, VECTOR, single_digest, vector_digest

_RECORDED = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_env_is_bit_for_bit_as_recorded(name):
    """Observations, rewards, flags, infos, masks and bankrolls of 300 steps, as recorded before the
    session layer replaced the env's internals (tests/golden_env.py)."""
    assert single_digest(SINGLE[name]) == _RECORDED[f"single/{name}"]


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_vector_env_is_bit_for_bit_as_recorded(name):
    assert vector_digest(VECTOR[name]) == _RECORDED[f"vector/{name}"]


# ---------------------------------------------------------------------------- the session itself
import numba  # noqa: E402
import numpy as np  # noqa: E402

from pb_gym import engine  # noqa: E402
from pb_gym import session as session_  # noqa: E402
from pb_gym.rules import BETS, Rules  # noqa: E402

BANKER, PLAYER, TIE = (BETS.index(b) for b in ("banker", "player", "tie"))


def _requests(k, n, **columns):
    out = np.zeros((k, n, len(BETS)))
    for bet, value in columns.items():
        out[:, :, BETS.index(bet)] = value
    return out


def test_stake_rules_in_their_documented_order():
    session = session_.Session(
        Rules(), session_.Limits(bankroll=100.0, table_min=5.0, table_max=50.0), 1, 6, seed=0
    )
    requested = np.zeros((6, 1, len(BETS)))
    requested[0, 0, BANKER] = 20.0  # placed as asked
    requested[1, 0, BANKER] = 80.0  # 2: the table maximum
    requested[2, 0, [BANKER, PLAYER]] = 50.0, 50.0  # exactly the bankroll: kept
    requested[3, 0, BANKER] = 4.0  # 4: below the minimum, not placed
    requested[4, 0, [BANKER, TIE]] = 50.0, 4.0  # the tie spot dropped, banker kept
    session.seats.bankroll[5] = 60.0
    requested[5, 0, [BANKER, PLAYER]] = 45.0, 30.0  # 3: 75 > 60, scaled by 60/75
    placed = session.place(requested)
    np.testing.assert_array_equal(
        placed.stakes[:, 0, :3], [[20, 0, 0], [50, 0, 0], [50, 50, 0], [0, 0, 0], [50, 0, 0], [36, 24, 0]]
    )
    np.testing.assert_array_equal(placed.placed[:, 0], [1, 1, 1, 0, 1, 1])
    np.testing.assert_array_equal(placed.table_capped[:, 0], [0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(placed.bankroll_capped[:, 0], [0, 0, 0, 0, 0, 1])
    assert (session.seats.stakes == 0).all()  # place() changes nothing


def test_forced_bet_and_bankroll_cut():
    limits = session_.Limits(bankroll=30.0, table_min=10.0, table_max=100.0, allow_no_bet=False)
    session = session_.Session(Rules(), limits, 1, 3, seed=0)
    requested = np.zeros((3, 1, len(BETS)))
    requested[0, 0, PLAYER] = 2.0  # below the minimum: forced to the minimum on its chosen column
    requested[1, 0, BANKER] = 500.0  # the table maximum binds first, then the bankroll (all-in)
    placed = session.place(requested)  # seat 2 asks nothing: the minimum on banker (first column)
    np.testing.assert_array_equal(placed.stakes[:, 0, :2], [[0, 10], [30, 0], [10, 0]])
    np.testing.assert_array_equal(placed.table_capped[:, 0], [0, 1, 0])
    np.testing.assert_array_equal(placed.bankroll_capped[:, 0], [0, 1, 0])
    np.testing.assert_array_equal(
        session.place(requested, chosen=np.full((3, 1), TIE)).stakes[2, 0, :3], [0, 0, 10]
    )


def test_seats_share_the_hand_and_settle_as_the_engine():
    rules = Rules()
    session = session_.Session(rules, session_.Limits(1e9, 1.0, 1e6), 64, 2, seed=1)
    rng = np.random.default_rng(0)
    for _ in range(60):
        requested = rng.random((2, 64, len(BETS))) * 10 * (rng.random((2, 64, len(BETS))) < 0.3)
        session.play(requested)
        for k in range(2):
            np.testing.assert_allclose(
                session.seats.net[k],
                engine.settle(rules, session.hand, session.seats.stakes[k]),
                rtol=0,
                atol=1e-12,
            )
    hand = session.hand
    np.testing.assert_array_equal(
        session.records.hand_class,
        session_.R.hand_class(
            hand.player_total,
            hand.banker_total,
            hand.player_ncards,
            hand.banker_ncards,
            hand.player_pair,
            hand.banker_pair,
        ),
    )
    np.testing.assert_array_equal(session.seats.hands, 60)


def test_a_seat_that_ended_sits_out_and_the_others_play_on():
    limits = session_.Limits(bankroll=10.0, table_min=10.0, table_max=10.0, win_target=1e9)
    session = session_.Session(Rules(), limits, 200, 2, seed=2)
    requested = _requests(2, 200, banker=10.0)
    requested[1] = 0.0  # seat 1 never bets
    session.play(requested)
    lost = session.seats.net[0] < 0
    assert lost.any() and (session.seats.ended[0][lost] == session_.RUIN).all()
    assert session.seats.terminated[0][lost].all()
    before = session.seats.bankroll.copy()
    session.play(requested)
    assert (session.seats.stakes[0][lost] == 0).all()
    assert (session.seats.bankroll[0][lost] == before[0][lost]).all()
    assert not session.seats.terminated[0][lost].any()  # reported once, on the hand it happened
    assert (session.seats.hands[0][lost] == 1).all() and (session.seats.hands[1] == 2).all()
    session.reset([int(np.flatnonzero(lost)[0])])
    assert session.seats.ended[0][lost].sum() == lost.sum() - 1


def test_hand_limit_stop_loss_and_tolerance():
    limits = session_.Limits(
        bankroll=100.0, table_min=1.0, table_max=100.0, stop_loss_floor=90.0, max_hands=3, tolerance=1e-9
    )
    session = session_.Session(Rules(), limits, 300, 1, seed=3)
    for _ in range(3):
        session.play(_requests(1, 300, player=10.0))
    ended = session.seats.ended[0]
    reasons = set(ended.tolist())
    assert (
        reasons <= {session_.STOP_LOSS, session_.MAX_HANDS, session_.TARGET}
        and {session_.STOP_LOSS, session_.MAX_HANDS} <= reasons
    )
    assert (session.seats.bankroll[0][ended == session_.STOP_LOSS] <= 90.0).all()
    # the tolerance: a stake a hair below the minimum is placed
    near = session_.Session(Rules(), limits, 1, 1, seed=0).place(_requests(1, 1, banker=1.0 - 1e-12))
    assert near.placed.all()


def test_bad_requests_and_limits_are_named():
    session = session_.Session(Rules(), session_.Limits(100.0, 1.0, 10.0), 3, 2)
    with pytest.raises(ValueError, match=r"^requested stakes must have shape \(2, 3, 7\)"):
        session.play(np.zeros((3, 7)))
    with pytest.raises(ValueError, match="^requested stakes must be >= 0$"):
        session.play(-np.ones((2, 3, 7)))
    with pytest.raises(ValueError, match="^requested stakes must be finite numbers$"):
        session.play(np.full((2, 3, 7), np.nan))
    for bad in (np.inf, -np.inf):  # a non-finite stake is named first, wherever a negative one is
        requested = np.zeros((2, 3, 7))
        requested[0, 0, 0], requested[1, 2, 6] = -1.0, bad
        with pytest.raises(ValueError, match="^requested stakes must be finite numbers$"):
            session.play(requested)
    transposed = np.zeros((7, 3, 2)).T  # (not contiguous: checked and played as a copy)
    transposed[1, 1, 1] = -2.0
    with pytest.raises(ValueError, match="^requested stakes must be >= 0$"):
        session.play(transposed)
    with pytest.raises(
        ValueError,
        match=r"^Limits.table_max=1.0 is not allowed; allowed: a number >= "
        r"table_min \(5\)$",
    ):
        session_.Limits(100.0, 5.0, 1.0)
    with pytest.raises(ValueError, match=r"^deal must be a boolean mask of shape \(3,\)$"):
        session.play(np.zeros((2, 3, 7)), deal=np.ones(3))


def test_a_pass_that_writes_some_seats_itself_has_the_others_checked():
    """play_arguments' checked_seats: the listed seats' requests are refused as play() refuses them;
    the others are the caller's (the evaluator writes its progressions' stakes inside its pass)."""
    session = session_.Session(Rules(), session_.Limits(100.0, 1.0, 10.0), 3, 3)
    requested = np.zeros((3, 3, 7))
    requested[0, 1, 0] = np.nan  # a seat the caller answers for
    requested[2, 0, 1] = -1.0
    with pytest.raises(ValueError, match="^requested stakes must be >= 0$"):
        session.play_arguments(requested, checked_seats=[1, 2])
    requested[2, 0, 1] = 0.0
    assert session.play_arguments(requested, checked_seats=[1, 2])[1] is not None
    assert session.play_arguments(requested, checked_seats=[])[1].shape == (3, 3, 7)
    with pytest.raises(ValueError, match="^requested stakes must be finite numbers$"):
        session.play_arguments(requested)
    for bad in ([3], [-1], [0.5], [[0]]):
        with pytest.raises(
            ValueError, match=r"^checked_seats=.* is not allowed; allowed: seat indices 0\.\.2$"
        ):
            session.play_arguments(requested, checked_seats=bad)


def test_payoff_matrix_is_cached_per_rules_and_read_only():
    assert session_.payoff_matrix(Rules()) is session_.payoff_matrix(Rules())
    assert not session_.payoff_matrix(Rules()).flags.writeable


@pytest.mark.parametrize("forced", [False, True])
def test_the_single_column_path_applies_the_same_rules(forced):
    """place_rows(single=True) (an env's discrete action: one requested column) gives the stakes and
    flags of the general path."""
    rng = np.random.default_rng(5)
    n = 4000
    limits = session_.Limits(bankroll=50.0, table_min=5.0, table_max=40.0, allow_no_bet=not forced)
    chosen = rng.integers(-1, len(BETS), (1, n)) if not forced else rng.integers(0, len(BETS), (1, n))
    requested = np.zeros((1, n, len(BETS)))
    rows = np.flatnonzero(chosen[0] >= 0)
    requested[0, rows, chosen[0, rows]] = rng.choice([0.0, 1.0, 4.99, 5.0, 20.0, 40.0, 45.0, 80.0], rows.size)
    results = []
    for single in (False, True):
        seats = session_.Seats.empty(1, n, len(BETS))
        seats.bankroll[0] = (
            rng.choice([0.0, 3.0, 5.0, 30.0, 50.0, 100.0], n) if not results else results[0][0]
        )
        session_.place_rows(
            0,
            n,
            np.ones(n, bool),
            requested,
            chosen,
            False,
            seats.view,
            limits.struct(),
            single,
        )
        results.append(
            (
                seats.bankroll[0].copy(),
                seats.stakes.copy(),
                seats.placed.copy(),
                seats.table_capped.copy(),
                seats.bankroll_capped.copy(),
            )
        )
    for general, single in zip(results[0][1:], results[1][1:], strict=True):
        np.testing.assert_array_equal(general, single)
    assert results[0][2].any() and not results[0][2].all()


def test_the_kernels_views_hold_each_array_under_its_own_name():
    """The kernels read the state's arrays by name: every field of a view is the array of that name
    (a view listing two same-dtype arrays in swapped order would deal into the wrong one)."""
    session = session_.Session(
        Rules(), session_.Limits(bankroll=100.0, table_min=5.0, table_max=50.0), 3, 2, seed=0
    )
    seats, records, _, _ = session.structs()
    for view, owner in ((seats, session.seats), (records, session.records)):
        assert owner._VIEW_FIELDS == tuple(name for name, _, _ in owner._FIELDS)
        typed = numba.typeof(view).field_dict  # the compiled object's fields, in its order
        assert tuple(typed) == owner._VIEW_FIELDS
        for name, dtype, ndim in owner._FIELDS:
            assert (typed[name].dtype, typed[name].ndim) == (numba.from_dtype(np.dtype(dtype)), ndim), name
    limits = session.limits.struct()
    assert (limits.table_min, limits.table_max, limits.target, limits.floor) == (5.0, 50.0, np.inf, -np.inf)
    assert session_.deal_constants(Rules(decks=6)).per_rank == 24


def test_one_outcome_code_and_the_bead_plate_stores_it_plus_one():
    """info["winner"], HandResult.winner and the last_hand one-hot use Outcome; the bead plate stores
    bead_code(outcome) = outcome + 1 (0 = an empty cell) and BEAD_CODES letters it."""
    from pb_gym.rules import BEAD_EMPTY, Outcome, bead_code, bead_outcome

    assert [int(o) for o in Outcome] == [0, 1, 2] and session_.BEAD_CODES == ("", "B", "P", "T")
    session = session_.Session(
        Rules(), session_.Limits(bankroll=100.0, table_min=1.0, table_max=10.0), 50, history=3, seed=4
    )
    session.play(np.zeros((50, len(BETS))))
    winner = session.hand.winner
    np.testing.assert_array_equal(session.records.bead[:, 0], bead_code(winner))
    np.testing.assert_array_equal(bead_outcome(session.records.bead[:, 0]), winner)
    assert (session.records.bead[:, 1:] == BEAD_EMPTY).all()
    np.testing.assert_array_equal(session.records.last_hand[:, :3].argmax(axis=1), winner)
    assert set(winner.tolist()) == {Outcome.BANKER, Outcome.PLAYER, Outcome.TIE}
    assert [session_.BEAD_CODES[c] for c in bead_code(np.array(list(Outcome)))] == ["B", "P", "T"]
