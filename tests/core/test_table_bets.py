"""Every catalog bet, and a user's own, playable at a table: the env's extra bet columns.

The table's columns are decided in one place, :class:`pb_gym.catalog.TableBets`: the seven
``rules.BETS`` spots first (so every ``BETS.index`` stays a column), then the extra bets."""

import gymnasium as gym
import numpy as np
import pytest

import pb_gym  # noqa: F401  (registers the env)
from pb_gym import catalog
from pb_gym import rules as R
from pb_gym.envs import config as env_config
from pb_gym.envs import tables as env_tables
from pb_gym.envs.vector import PuntoBancoVectorEnv

from repo_paths import ROOT  # noqa: E402

TIE_ON_7 = {
    "name": "tie_on_7",
    "title": "Tie on 7",
    "source": "a test bet",
    "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 45}],
}


def _hand_classes(info: dict) -> np.ndarray:
    return R.hand_class(
        info["player_total"],
        info["banker_total"],
        (np.asarray(info["player_cards"]) > 0).sum(axis=-1),
        (np.asarray(info["banker_cards"]) > 0).sum(axis=-1),
        info["player_pair"],
        info["banker_pair"],
    )


def test_columns_are_bets_then_extra_and_default_unchanged():
    cfg = env_config.make_config(side_bets=["player_pair", "dragon_bonus_player", "egalite_7"])
    assert cfg.rules.side_bets == ("player_pair",)
    assert cfg.bets.columns == R.BETS + ("dragon_bonus_player", "egalite_7")
    assert cfg.bet_choices == (
        "no_bet",
        "banker",
        "player",
        "tie",
        "player_pair",
        "dragon_bonus_player",
        "egalite_7",
    )
    assert cfg.choice_spot.tolist() == [-1, 0, 1, 2, 3, 7, 8]
    assert np.array_equal(cfg.bets.pay_matrix(), catalog.pay_matrix(cfg.bets.columns, cfg.rules))
    default = env_config.make_config()
    assert default.extra_bets == () and default.bets.columns == R.BETS
    assert default.bet_choices == ("no_bet",) + R.BETS  # the seven spots, as before
    assert env_tables.new_tables(default, 1).session.payoffs.shape == (R.N_HAND_CLASSES, R.N_BETS)


@pytest.mark.parametrize("bet", ["dragon_bonus_player", "egalite_7", "big_tiger", "tie_on_7"])
def test_single_env_settles_every_hand_by_the_catalog(bet):
    offered = TIE_ON_7 if bet == "tie_on_7" else bet  # a user's bet: its definition, in side_bets
    env = gym.make("pb_gym/PuntoBanco-v0", side_bets=[offered], max_episode_steps=10_000)
    cfg = env.unwrapped.config
    pay = catalog.pay_matrix([cfg.bets.bet(bet)], cfg.rules)[:, 0]
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
    tie_on_7 = catalog.bet_from_dict(TIE_ON_7)
    env = PuntoBancoVectorEnv(
        16, side_bets=[tie_on_7, "lucky6"], action_mode="box", info_ev=True, hand_info=True
    )
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
    expected = PuntoBancoVectorEnv(4, side_bets=["lucky6"], reward="expected", info_ev=True, hand_info=True)
    expected.reset(seed=3)
    choice = expected.config.bet_choices.index("lucky6")
    for _ in range(5):
        _, reward, *_, info = expected.step(np.full(4, 1 + (choice - 1) * 5))
        assert np.allclose(reward, info["ev"][:, R.N_BETS] * info["stakes"][:, R.N_BETS], atol=1e-15)
        assert info["ev"].shape == (4, 8)
        # the seven spots' EVs are those of a table without extra bets, to the bit
        assert np.all(info["ev"][:, : R.N_BETS] < 1.0)


def test_info_ev_is_the_catalog_ev_of_the_cards_unseen():
    env = gym.make("pb_gym/PuntoBanco-v0", side_bets=["dragon_bonus_banker"], info_ev=True)
    env.reset(seed=11)
    _, _, _, _, info = env.step(0)
    composition = R.full_shoe(8) - _seen_before(env.unwrapped)
    want = catalog.expected_values(composition, ["dragon_bonus_banker"])[0]
    assert info["ev"][R.N_BETS] == pytest.approx(want, abs=1e-12)


def _seen_before(env) -> np.ndarray:
    """Cards removed from the full shoe before the hand just dealt (burn and the hands before it)."""
    tables = env.tables
    comp = tables.shoe.unseen[0].astype(np.int64).copy()
    for card in np.concatenate([tables.result.player_cards[0], tables.result.banker_cards[0]]):
        if card:
            comp[card - 1] += 1
    return R.full_shoe(8) - comp


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"side_bets": ["lucky7"]}, r"side_bets: unknown bet 'lucky7'; allowed: player_pair, .*egalite_7"),
        ({"side_bets": ["banker"]}, r"side_bets: unknown bet 'banker'"),
        ({"side_bets": ["lucky6", "lucky6"]}, r"'lucky6' is given twice"),
        ({"side_bets": [{"name": "x", "rows": [{"when": {"winner": "nobody"}, "pays": 1}]}]}, r"nobody"),
        ({"side_bets": ["tie_on_7"]}, r"side_bets: unknown bet 'tie_on_7'"),  # a user's bet: its definition
        ({"side_bets": [{"name": "x"}]}, r"bet 'x': 'rows' must be a non-empty list"),
        ({"side_bets": [{**TIE_ON_7, "name": "banker"}]}, r"may not be called 'banker'"),
        ({"side_bets": [TIE_ON_7, TIE_ON_7]}, r"'tie_on_7' is given twice"),
        ({"side_bets": 7}, r"side_bets=7 is not allowed; allowed: None or a list of bet names"),
    ],
)
def test_bad_bets_name_the_allowed_ones(kwargs, message):
    with pytest.raises(ValueError, match=message):
        env_config.make_config(**kwargs)


def test_side_bets_with_explicit_rules():
    """With rules=Rules(...), side_bets lists every side bet offered (the rules' own among them): one
    knob for the rules' side bets, the catalog's and the user's."""
    rules = R.Rules(decks=6, side_bets=("dragon7",))
    cfg = env_config.make_config(rules=rules, side_bets=["dragon7", "either_pair"])
    assert cfg.bets.offered == ("banker", "player", "tie", "dragon7", "either_pair")
    assert cfg.rules == rules and cfg.side_bets == ("dragon7", "either_pair")
    env = gym.make("pb_gym/PuntoBanco-v0", rules=rules, side_bets=["dragon7", "either_pair"])
    assert env.action_space.n == 1 + 5 * 5
    # side_bets replaces the rules'
    only_extra = env_config.make_config(rules=rules, side_bets=["either_pair"])
    assert only_extra.rules.side_bets == () and only_extra.bets.offered[3:] == ("either_pair",)
    user = env_config.make_config(side_bets=[TIE_ON_7, "panda8"])
    assert user.side_bets[0] == "panda8" and user.side_bets[1].name == "tie_on_7"
    assert env_config.EnvConfig.from_record(user.record()) == user


def test_older_records_map_onto_side_bets():
    """env.json files written before side_bets was the one knob: extra_bets and custom_bets (a user's
    bet by name), flatten_obs, and the older defaults; an unknown key names the allowed ones."""
    old = {
        "decks": 8,
        "side_bets": ["dragon7", "tie_on_7"],
        "custom_bets": [TIE_ON_7],
        "extra_bets": ["either_pair"],
        "flatten_obs": True,
    }
    cfg = env_config.EnvConfig.from_record(old)
    assert cfg.bets.offered == ("banker", "player", "tie", "dragon7", "tie_on_7", "either_pair")
    assert (cfg.observation, cfg.obs_scale, cfg.action_mode) == ("flat", "raw", "multidiscrete")
    ruled = env_config.EnvConfig.from_record(
        {"rules": {"side_bets": ["panda8"]}, "extra_bets": ["either_pair"]}
    )
    assert ruled.bets.offered[3:] == ("panda8", "either_pair")
    with pytest.raises(
        ValueError, match=r"env.json: unknown environment setting 'colour'; allowed: rules, decks"
    ):
        env_config.EnvConfig.from_record({"colour": "red"})


# --------------------------------------------------------------------------------------------------
# pb-gym evaluate: systems on catalog and custom bets, Kelly on their exact EV
# --------------------------------------------------------------------------------------------------
def _study(**overrides):
    from pb_gym.experiments import evaluate as E
    from pb_gym.experiments.common.yaml_config import validate

    data = {
        "name": "extra",
        "sessions": 40,
        "hands": 60,
        "chunk_sessions": 40,
        "bankroll": 1000,
        "table": {"unit": 10, "minimum": 10, "maximum": 5000},
        "rules": {"side_bets": ["player_pair", "lucky6", "tie_on_7"]},
        "custom_bets": [TIE_ON_7],
        "systems": [
            {"type": "flat", "bet": "tie_on_7"},
            {"type": "flat", "bet": "lucky6"},
            {"type": "kelly", "bets": ["egalite_7"], "fraction": 0.5},
        ],
    }
    data.update(overrides)
    if "egalite_7" not in data["rules"]["side_bets"]:
        data["rules"] = {"side_bets": data["rules"]["side_bets"] + ["egalite_7"]}
    return E, validate(data, E.StudyConfig, "extra.yaml")


def test_evaluate_flat_on_catalog_and_custom_bets_and_kelly_on_a_catalog_bet():
    E, config = _study()
    assert config.table_bets().columns == R.BETS + ("lucky6", "tie_on_7", "egalite_7")
    report = E.run_study(config)
    by_name = {s["name"]: s for s in report["systems"]}
    custom, lucky6, kelly = by_name["flat (tie_on_7)"], by_name["flat (lucky6)"], by_name["kelly"]
    assert custom["hands"] == lucky6["hands"] == 40 * 60  # a bet on every hand (no session ends)
    # a flat bettor's exact edge is the full-shoe EV of its bet, from the catalog
    want = catalog.expected_values(R.full_shoe(8), [catalog.bet_from_dict(TIE_ON_7), "lucky6"], R.Rules())
    assert custom["exact_edge"] == pytest.approx(want[0], rel=1e-12)
    assert lucky6["exact_edge"] == pytest.approx(want[1], rel=1e-12)
    assert round(lucky6["exact_edge"], 6) == -0.116985  # Wizard of Odds, "Lucky 6"
    assert kelly["bet"] == "egalite_7" and kelly["hands"] == 0  # never positive in 60 hands


def test_evaluate_refuses_a_bet_the_table_does_not_offer():
    from pb_gym.experiments.common.yaml_config import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"bet 'big_tiger' is not offered by these rules; offered: "
        r"banker, player, tie, player_pair, lucky6, tie_on_7",
    ):
        _study(systems=[{"type": "flat", "bet": "big_tiger"}])
    with pytest.raises(ConfigError, match=r"side_bets: unknown bet 'nope'"):
        _study(rules={"side_bets": ["nope"]})


def test_kelly_on_a_catalog_bet_bets_only_where_its_exact_ev_is_positive():
    from pb_gym.agents import systems as S

    table = catalog.table_bets(R.Rules(), ["egalite_7", "lucky6"])
    kelly = S.Kelly(bets=["egalite_7", "lucky6"])
    kelly.bind(table)
    rng = np.random.default_rng(4)
    full = R.full_shoe(8)
    # compositions late in a shoe, some rich in sevens (egalite_7 positive), some not
    comps = np.array([np.maximum(full - rng.integers(0, 26, 13) * (r % 2 + 1), 0) for r in range(60)])
    comps[:20, 6] = 30  # many sevens left
    comps[:20, :6] //= 4
    spot, f = kelly.stake_fractions(comps, R.Rules(), table)
    ev = catalog.expected_values(comps, ["egalite_7", "lucky6"])
    best_positive = ev.max(axis=1) > 0
    assert np.array_equal(f > 0, best_positive)
    assert best_positive.sum() >= 5 and (~best_positive).sum() >= 5  # both kinds were tried
    assert set(spot[f > 0].tolist()) <= {table.column("egalite_7"), table.column("lucky6")}
    assert np.all(spot[f == 0] == S.NO_BET)


def test_train_with_a_catalog_side_bet_runs_and_its_policy_plays_it_in_evaluate(tmp_path):
    """A few hundred PPO steps on a table offering lucky6 (pb-gym train), then the held-out
    evaluation replays the policy on a table with the same columns."""
    pytest.importorskip("stable_baselines3")
    import json

    import yaml

    from pb_gym.experiments import cli

    data = yaml.safe_load((ROOT / "configs/train/ppo-smoke.yaml").read_text())
    data["env"].setdefault("rules", {})["side_bets"] = ["lucky6"]
    data.update(total_timesteps=256, n_envs=8, curve_points=2)
    data["hyperparameters"].update(n_steps=32, batch_size=64, n_epochs=1)
    data["evaluation"].update({"sessions": 40, "hands": 20, "chunk_sessions": 40})
    path = tmp_path / "lucky6.yaml"
    path.write_text(yaml.safe_dump(data))
    assert cli.main(["train", str(path), "--out", str(tmp_path / "out"), "--json"]) == 0
    meta = json.loads((tmp_path / "out" / "env.json").read_text())
    assert meta["env_kwargs"]["side_bets"] == ["lucky6"]
    from pb_gym.agents import learned

    cfg = learned.training_config(tmp_path / "out")
    assert cfg.bets.offered == ("banker", "player", "tie", "lucky6")
    policy = learned.Sb3Policy(model=str(tmp_path / "out"))
    policy.bind(catalog.table_bets(cfg.rules, ["either_pair", "lucky6"]))  # lucky6 is column 8 there
    assert policy.bet_columns() == (0, 1, 2, 8)
    with pytest.raises(learned.ModelMismatch, match=r"does not offer lucky6"):
        policy.bind(catalog.table_bets(cfg.rules, ["either_pair"]))


def test_the_text_render_names_the_stakes_on_extra_catalog_bets():
    """The ansi picture lists every staked column of the table by its name, the extra bets included."""

    env = gym.make(
        "pb_gym/PuntoBanco-v0", render_mode="ansi", side_bets=["dragon7", "lucky6"], action_mode="box"
    )
    env.reset(seed=1)
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    action[0] = action[-1] = 0.05  # banker and lucky6: 5 units each of a 100-unit bankroll
    env.step(action)
    assert "stakes: banker 5, lucky6 5 -> net" in env.render()
