"""The environments under a continuous shuffling machine (``shuffle="csm"``): its errors, the
machine's content before every hand, the randomness of what it deals, and the env checkers."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import pb_gym
from pb_gym import exact
from pb_gym import rules as R

FULL = R.full_shoe(8)
CSM = dict(shuffle="csm", burn=False)
CHI2_2_999 = 13.81551  # the 99.9% quantiles of chi-square with 2 and 12 degrees of freedom
CHI2_12_999 = 32.90949


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(shuffle="machine"), "shuffle='machine' is not allowed; allowed: hand, csm"),
        (dict(shuffle="csm"), "burn=True is not allowed; allowed: False with shuffle='csm'"),
        (CSM | dict(csm_delay=51), "csm_delay=51 is not allowed; allowed: an integer from 0 to 50"),
        (dict(csm_delay=2), "csm_delay=2 is not allowed; allowed: 0 with shuffle='hand'"),
        (CSM | dict(one_shoe=True), "one_shoe=True is not allowed; allowed: False with shuffle='csm'"),
        (CSM | dict(leaks=["bottom_card"]), "allowed: \\[\\] with shuffle='csm'"),
        (CSM | dict(decks=1, csm_delay=6), "csm_delay=6 is not allowed; allowed: at most 5 with 1 deck"),
    ],
)
def test_a_bad_shuffle_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pb_gym.PuntoBancoEnv(**kwargs)


def _dealt(info, t=None):
    """Cards by rank of the hand just dealt (at table ``t`` of a vector env's info)."""
    cards = [info["player_cards"], info["banker_cards"]]
    if t is not None:
        cards = [hand[t] for hand in cards]
    return np.bincount(np.concatenate(cards), minlength=14)[1:]


@pytest.mark.parametrize("delay", [0, 1, 5])
def test_the_machine_lacks_exactly_the_last_hands(delay):
    """Before every hand the cards unseen (the ``shoe`` feature and the state) are the full shoe less
    the cards of the last ``delay`` hands, at every table; the machine never reaches a cut card."""
    env = pb_gym.PuntoBancoVectorEnv(16, **CSM, csm_delay=delay, hand_info=True, max_hands=None)
    obs, _ = env.reset(seed=delay)
    recent: list[np.ndarray] = []
    for _ in range(150):
        obs, _, _, _, info = env.step(np.zeros(16, dtype=np.int64))  # no bet: no episode ends
        recent.append(np.array([_dealt(info, t) for t in range(16)]))
        out = sum(recent[-delay:]) if delay else 0
        np.testing.assert_array_equal(env.tables.shoe.unseen, np.broadcast_to(FULL - out, (16, 13)))
        assert not info["shuffled"].any()


def test_a_machine_without_delay_deals_every_hand_from_the_full_shoe():
    """With the cards back after each hand, the outcomes follow the full shoe's exact probabilities
    (chi-square over banker, player and tie at 99.9%) and the first card of each hand its ranks."""
    env = pb_gym.PuntoBancoVectorEnv(256, **CSM, hand_info=True, max_hands=None)
    env.reset(seed=11)
    winners, firsts = [], []
    for _ in range(120):
        _, _, _, _, info = env.step(np.zeros(256, dtype=np.int64))
        winners.append(info["winner"])
        firsts.append(info["player_cards"][:, 0])
    counts = np.bincount(np.concatenate(winners), minlength=3)[:3]
    by_winner = np.bincount(R.OUTCOME_WINNER, weights=exact.outcome_probabilities(FULL), minlength=3)
    expected = counts.sum() * by_winner
    assert ((counts - expected) ** 2 / expected).sum() < CHI2_2_999
    ranks = np.bincount(np.concatenate(firsts), minlength=14)[1:]
    expected_ranks = ranks.sum() * FULL / FULL.sum()
    assert ((ranks - expected_ranks) ** 2 / expected_ranks).sum() < CHI2_12_999


def test_the_single_env_under_a_machine_passes_the_checkers_and_sees_the_machine():
    env = pb_gym.PuntoBancoEnv(**CSM, csm_delay=2, max_hands=None)
    check_env(env)
    env.reset(seed=4)
    recent = []
    for _ in range(200):
        _, _, _, _, info = env.step(0)
        recent.append(_dealt(info))
        np.testing.assert_array_equal(env.tables.shoe.unseen[0], FULL - sum(recent[-2:]))


def test_a_new_episode_starts_a_full_machine():
    """Episodes of three hands (autoreset on the next step): after each reset the machine holds the
    whole shoe again, and then lacks only the hands of the new episode."""
    env = pb_gym.PuntoBancoVectorEnv(8, **CSM, csm_delay=5, hand_info=True, max_hands=3)
    env.reset(seed=2)
    since_reset = [[] for _ in range(8)]
    done, resets = np.zeros(8, dtype=bool), 0
    for _ in range(40):
        _, _, terminated, truncated, info = env.step(np.zeros(8, dtype=np.int64))
        for t in range(8):
            since_reset[t] = [] if done[t] else since_reset[t] + [_dealt(info, t)]
            np.testing.assert_array_equal(env.tables.shoe.unseen[t], FULL - sum(since_reset[t][-5:], 0))
        done = terminated | truncated
        resets += int(done.sum())
    assert resets == 8 * 10  # an episode ends every fourth step (three hands, then the reset)


def test_the_sb3_adapter_deals_from_the_machine():
    """SB3's VecEnv over the vector env (same-step resets): the machine's bookkeeping holds there too."""
    pytest.importorskip("stable_baselines3")
    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    venv = PuntoBancoSB3VecEnv(4, **CSM, csm_delay=1, max_hands=5, hand_info=True)
    venv.reset()
    resets = 0
    for _ in range(30):
        _, _, dones, infos = venv.step(np.zeros(4, dtype=np.int64))
        for t in range(4):
            dealt = _dealt(infos[t])
            # after a same-step reset the machine is full; else it lacks the hand just dealt
            want = FULL if dones[t] else FULL - dealt
            np.testing.assert_array_equal(venv.venv.tables.shoe.unseen[t], want)
        resets += int(dones.sum())
    assert resets == 4 * 6  # five hands an episode, reset in the step that ends it


def test_pb_gym_train_refuses_a_machine_it_would_evaluate_on_shoes():
    pytest.importorskip("stable_baselines3")
    from pb_gym.experiments.common.yaml_config import ConfigError, validate
    from pb_gym.experiments.train import settings as train_config

    config = {"name": "x", "algorithm": "PPO", "policy": "MlpPolicy", "total_timesteps": 1000}
    with pytest.raises(ConfigError, match="env.shuffle='csm' is not allowed; allowed: 'hand'"):
        validate(
            config | {"env": {"shuffle": "csm", "rules": {"burn": False}}}, train_config.TrainConfig, "t"
        )
