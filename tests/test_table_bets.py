"""Every catalog bet, and a user's own, playable at a table (#14): the env's extra bet columns.

The table's columns are decided in one place, :class:`pb_gym.catalog.TableBets`: the seven
``rules.BETS`` spots first (so every ``BETS.index`` stays a column), then the extra bets."""

import gymnasium as gym
import numpy as np
import pytest

import pb_gym  # noqa: F401  (registers the env)
from pb_gym import catalog as C
from pb_gym import rules as R
from pb_gym.envs import table as T
from pb_gym.envs.vector import PuntoBancoVectorEnv

TIE_ON_7 = {"name": "tie_on_7", "title": "Tie on 7", "source": "a test bet",
            "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 45}]}


def _hand_classes(info: dict) -> np.ndarray:
    return R.hand_class(info["player_total"], info["banker_total"],
                        (np.asarray(info["player_cards"]) > 0).sum(axis=-1),
                        (np.asarray(info["banker_cards"]) > 0).sum(axis=-1),
                        info["player_pair"], info["banker_pair"])


def test_columns_are_bets_then_extra_and_default_unchanged():
    cfg = T.make_config(side_bets=["player_pair", "dragon_bonus_player", "egalite_7"])
    assert cfg.rules.side_bets == ("player_pair",)
    assert cfg.bets.columns == R.BETS + ("dragon_bonus_player", "egalite_7")
    assert cfg.bet_choices == ("no_bet", "banker", "player", "tie", "player_pair",
                               "dragon_bonus_player", "egalite_7")
    assert cfg.choice_spot.tolist() == [-1, 0, 1, 2, 3, 7, 8]
    assert np.array_equal(cfg.bets.pay_matrix(), C.pay_matrix(cfg.bets.columns, cfg.rules))
    default = T.make_config()
    assert default.extra_bets == () and default.bets.columns == R.BETS
    assert default.bet_choices == ("no_bet",) + R.BETS  # the seven spots, as before
    assert T.new_tables(default, 1).session.payoffs.shape == (R.N_HAND_CLASSES, R.N_BETS)


@pytest.mark.parametrize("bet", ["dragon_bonus_player", "egalite_7", "big_tiger", "tie_on_7"])
def test_single_env_settles_every_hand_by_the_catalog(bet):
    custom = [TIE_ON_7] if bet == "tie_on_7" else []
    env = gym.make("pb_gym/PuntoBanco-v0", side_bets=[bet], custom_bets=custom, max_episode_steps=10_000)
    cfg = env.unwrapped.config
    pay = C.pay_matrix([cfg.bets.bet(bet)], cfg.rules)[:, 0]
    choice = cfg.bet_choices.index(bet)
    levels = len(cfg.stake_levels)
    env.reset(seed=5)
    nets = []
    for _ in range(400):
        _, reward, terminated, truncated, info = env.step(1 + (choice - 1) * levels)  # 1 unit on it
        assert info["stakes"].shape == (R.N_BETS + 1,) and info["stakes"][R.N_BETS] == 1.0
        assert reward == pay[_hand_classes(info)]
        nets.append(reward)
        if terminated or truncated:
            env.reset()
    assert len(set(nets)) >= 2  # wins and losses were both dealt


def test_vector_env_box_custom_bet_settles_and_expected_reward_is_exact():
    tie_on_7 = C.bet_from_dict(TIE_ON_7)
    env = PuntoBancoVectorEnv(16, side_bets=[tie_on_7, "lucky6"], action_mode="box", info_ev=True,
                              hand_info=True)
    cfg = env.config
    assert env.single_action_space.shape == (5,)  # banker, player, tie, tie_on_7, lucky6
    pay = cfg.bets.pay_matrix()
    env.reset(seed=2)
    action = np.zeros((16, 5), np.float32)
    action[:, 3] = action[:, 4] = 0.05  # 5 units on each of the two extra bets
    for _ in range(30):
        _, reward, *_, info = env.step(action)
        stakes = info["stakes"]
        assert stakes.shape == (16, 9)
        assert np.allclose(reward, (stakes * pay[_hand_classes(info)]).sum(axis=1), rtol=0, atol=1e-12)
    expected = PuntoBancoVectorEnv(4, side_bets=["lucky6"], reward="expected", info_ev=True,
                                   hand_info=True)
    expected.reset(seed=3)
    choice = expected.config.bet_choices.index("lucky6")
    for _ in range(5):
        _, reward, *_, info = expected.step(np.full(4, 1 + (choice - 1) * 5))
        assert np.allclose(reward, info["ev"][:, R.N_BETS] * info["stakes"][:, R.N_BETS], atol=1e-15)
        assert info["ev"].shape == (4, 8)
        # the seven spots' EVs are those of a table without extra bets, to the bit
        assert np.all(info["ev"][:, :R.N_BETS] < 1.0)


def test_info_ev_is_the_catalog_ev_of_the_cards_unseen():
    env = gym.make("pb_gym/PuntoBanco-v0", side_bets=["dragon_bonus_banker"], info_ev=True)
    env.reset(seed=11)
    _, _, _, _, info = env.step(0)
    composition = R.full_shoe(8) - _seen_before(env.unwrapped)
    want = C.expected_values(composition, ["dragon_bonus_banker"])[0]
    assert info["ev"][R.N_BETS] == pytest.approx(want, abs=1e-12)


def _seen_before(env) -> np.ndarray:
    """Cards removed from the full shoe before the hand just dealt (burn and the hands before it)."""
    tables = env.tables
    comp = tables.shoe.unseen[0].astype(np.int64).copy()
    for card in np.concatenate([tables.result.player_cards[0], tables.result.banker_cards[0]]):
        if card:
            comp[card - 1] += 1
    return R.full_shoe(8) - comp


@pytest.mark.parametrize("kwargs, message", [
    ({"side_bets": ["lucky7"]}, r"side_bets: unknown bet 'lucky7'; allowed: player_pair, .*egalite_7"),
    ({"side_bets": ["banker"]}, r"side_bets: unknown bet 'banker'"),
    ({"side_bets": ["lucky6", "lucky6"]}, r"'lucky6' is given twice"),
    ({"extra_bets": ["dragon7"]}, r"extra_bets=.*rules' own side bets \(dragon7"),
    ({"side_bets": [{"name": "x", "rows": [{"when": {"winner": "nobody"}, "pays": 1}]}]}, r"nobody"),
    ({"side_bets": ["tie_on_7"], "custom_bets": [{**TIE_ON_7, "name": "lucky6"}]},
     r"custom bet 'lucky6': the name is taken"),
])
def test_bad_bets_name_the_allowed_ones(kwargs, message):
    with pytest.raises(ValueError, match=message):
        T.make_config(**kwargs)


def test_extra_bets_with_explicit_rules():
    rules = R.Rules(decks=6, side_bets=("dragon7",))
    cfg = T.make_config(rules=rules, extra_bets=["either_pair"])
    assert cfg.bets.offered == ("banker", "player", "tie", "dragon7", "either_pair")
    env = gym.make("pb_gym/PuntoBanco-v0", rules=rules, extra_bets=["either_pair"])
    assert env.action_space.n == 1 + 5 * 5
