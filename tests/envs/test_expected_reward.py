"""The ``"expected"`` reward prices only the bets staked: the same bits as pricing every bet of the
table (the computation it replaced), and each bet's exact EV, from a full shoe to a depleted one."""

import numpy as np
import pytest

import pb_gym.envs  # noqa: F401  (registers the tasks)
from pb_gym import catalog
from pb_gym.envs import PuntoBancoEnv
from pb_gym.envs.observation import composition_before_hand
from pb_gym.envs.tasks import action_meanings, get_task

ONE_TABLE = np.zeros(1, dtype=np.intp)


@pytest.mark.parametrize(
    "task, changes",
    [
        ("Discover-v0", {}),
        ("DiscoverAll-v0", {}),
        ("DiscoverAll-v0", {"decks": 1, "cut_card": 6}),  # shoes played down to 10 cards
    ],
)
def test_the_expected_reward_is_the_exact_ev_of_the_bet_placed(task, changes):
    spec = get_task(task)
    env = PuntoBancoEnv(**dict(spec.kwargs, **changes))
    meanings = action_meanings(spec)
    env.reset(seed=11)
    rng = np.random.default_rng(3)
    priced = shoes = 0
    fewest = 416
    for _ in range(150 if changes else 100):
        action = int(rng.integers(0, len(meanings)))
        _, reward, terminated, truncated, _ = env.step(action)
        composition = composition_before_hand(env.tables, ONE_TABLE)
        fewest = min(fewest, int(composition.sum()))
        if action:
            stakes = env.session.seats.stakes[0][ONE_TABLE]
            every_bet = env.config.bets.expected_values(composition)  # each bet priced
            assert reward == np.einsum("ij,ij->i", stakes, every_bet)[0]  # to the bit
            alone = catalog.expected_values(composition[0], [meanings[action]], env.config.rules)[0]
            assert reward == pytest.approx(alone, rel=0, abs=1e-12)
            priced += 1
        else:
            assert reward == 0.0
        if terminated or truncated:
            shoes += 1
            env.reset()
    assert priced > 60 and shoes >= 1
    assert fewest <= (10 if changes else 30)  # the last hands before the cut card: depleted shoes
