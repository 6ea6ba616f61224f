"""pb-gym train: smoke training per algorithm, config validation, the sb3 entry of evaluate, and the
parity of the learned policy's observations (built inside the evaluation loop) with the environment's."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("stable_baselines3")

from pb_gym import catalog  # noqa: E402
from pb_gym import rules as R  # noqa: E402
from pb_gym.agents import learned as learned_agents  # noqa: E402
from pb_gym.agents import systems as betting_systems  # noqa: E402
from pb_gym.envs import config as env_config  # noqa: E402
from pb_gym.envs import observation
from pb_gym.envs.vector import PuntoBancoVectorEnv  # noqa: E402
from pb_gym.experiments import (
    cli,  # noqa: E402
    evaluate,  # noqa: E402
    train,  # noqa: E402
)
from pb_gym.experiments.common import stats  # noqa: E402
from pb_gym.experiments.common.yaml_config import ConfigError, validate  # noqa: E402

import chunk_tasks  # noqa: E402
from repo_paths import ROOT  # noqa: E402

CONFIGS = ROOT / "configs" / "train"
TABLE = {"unit": 10, "minimum": 10, "maximum": 5000}
"""The table of ppo-smoke.yaml's env, in money."""


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    """One tiny PPO model shared by the tests (ppo-smoke.yaml)."""
    out = tmp_path_factory.mktemp("ppo")
    result = train.main(str(CONFIGS / "ppo-smoke.yaml"), out=str(out), as_json=True)
    return out, result


def _study(systems: list[dict], **changes):
    """A validated evaluate study of ``systems`` at the table ppo-smoke.yaml trains on (5 sessions of 5
    hands unless ``changes`` say otherwise)."""
    base = {"rules": {"side_bets": []}, "table": TABLE, "sessions": 5, "hands": 5}
    return validate({**base, **changes, "systems": systems}, evaluate.StudyConfig, "s")


def _check_run(out: Path, result: dict, algorithm: str) -> None:
    for name in (
        "model.zip",
        "env.json",
        "config.yaml",
        "vecnormalize.pkl",
        "learning_curve.csv",
        "learning_curve.png",
        "evaluation/report.json",
        "evaluation/systems.csv",
        "evaluation/profit_per_hand.json",
    ):
        assert (out / name).is_file(), name
    assert result["algorithm"] == algorithm and result["timesteps"] >= 4096
    rows = list(__import__("csv").DictReader(open(out / "learning_curve.csv")))
    assert len(rows) >= 4 and int(rows[-1]["timesteps"]) >= 4096
    assert all(0.0 <= float(r["bet_rate"]) <= 1.0 for r in rows)
    systems = {s["name"]: s for s in result["evaluation"]["systems"]}
    assert list(systems) == [f"{algorithm} (learned)", "flat banker", "never bet"]
    assert systems["never bet"]["hands"] == 0 and systems["never bet"]["net"] == 0
    assert systems["flat banker"]["hands"] == 200 * 40  # never ruined at 1 unit in 40 hands
    assert result["evaluation"]["seed"] == 1000003
    # the resolved config reloads as a valid config
    validate(yaml.safe_load((out / "config.yaml").read_text()), train.TrainConfig, "config.yaml")
    # the saved model reloads and acts
    model = learned_agents.algorithm_class(algorithm).load(out / "model.zip", device="cpu")
    assert model.num_timesteps == result["timesteps"]


def test_ppo_smoke_trains_saves_reloads_and_evaluates(ppo_run):
    out, result = ppo_run
    _check_run(out, result, "PPO")


@pytest.mark.parametrize("name,algorithm", [("a2c", "A2C"), ("dqn", "DQN")])
def test_smoke_training_per_algorithm_through_the_cli(tmp_path, capsys, name, algorithm):
    assert cli.main(["train", str(CONFIGS / f"{name}-smoke.yaml"), "--out", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    _check_run(tmp_path, result, algorithm)


@pytest.mark.parametrize(
    "algorithm,policy", [("MaskablePPO", "MultiInputPolicy"), ("RecurrentPPO", "MultiInputLstmPolicy")]
)
def test_sb3_contrib_algorithms(tmp_path, algorithm, policy):
    data = yaml.safe_load((CONFIGS / "ppo-smoke.yaml").read_text())
    data.update(
        algorithm=algorithm,
        policy=policy,
        total_timesteps=1024,
        n_envs=8,
        hyperparameters={"n_steps": 32, "batch_size": 128, "n_epochs": 1},
    )
    data["evaluation"].update(sessions=50, hands=20)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    result = train.main(str(path), out=str(tmp_path / "out"), as_json=True)
    learned = result["evaluation"]["systems"][0]
    assert learned["name"] == f"{algorithm} (learned)" and result["timesteps"] >= 1024


def test_sb3_entry_in_an_evaluation_config(ppo_run, tmp_path, capsys):
    """A study YAML with `type: sb3, model: <path>` runs end to end, and replays the training run's
    own held-out evaluation exactly (same seeds, deterministic policy)."""
    out, result = ppo_run
    study = {
        "name": "with a learned policy",
        "rules": {"decks": 8, "side_bets": []},
        "table": TABLE,
        "bankroll": 1000,
        "sessions": 200,
        "hands": 40,
        "seed": 1000003,
        "systems": [
            {"type": "sb3", "model": str(out), "name": "PPO (learned)"},
            {"type": "flat", "bet": "banker", "name": "flat banker"},
            {"type": "never", "name": "never bet"},
            {"type": "perfect", "bets": ["banker", "player", "tie"], "name": "perfect"},
        ],
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    report = evaluate.main(str(path), out=str(tmp_path / "eval"))
    printed = capsys.readouterr().out
    assert "PPO (learned)" in printed and "never bet placed no bet" in printed
    assert (tmp_path / "eval" / "report.json").is_file()
    ours = {s["name"]: s for s in report["systems"]}
    theirs = {s["name"]: s for s in result["evaluation"]["systems"]}
    for name in ("PPO (learned)", "flat banker", "never bet"):
        assert ours[name]["net"] == pytest.approx(theirs[name]["net"])
        assert ours[name]["hands"] == theirs[name]["hands"]
    assert ours["perfect"]["hands"] == 0  # banker/player/tie are never positive off an 8-deck shoe


def test_a_study_with_a_learned_policy_runs_its_chunks_serially_on_threads(ppo_run, monkeypatch):
    """The threads backend (evaluate's default) runs a study with a learned policy one chunk after the
    other: the policy seeds torch's process-wide random state, which chunks side by side would
    share; a study of systems alone runs its chunks on threads."""
    from pb_gym.experiments.common import scale

    out, _ = ppo_run
    backends = []
    real = scale.run

    def spy(task, chunks, backend, *args, **kwargs):
        backends.append(backend)
        return real(task, chunks, backend, *args, **kwargs)

    monkeypatch.setattr(scale, "run", spy)
    base = {"bankroll": 1000, "sessions": 20, "hands": 10, "chunk_sessions": 10}
    evaluate.run_study(
        _study([{"type": "sb3", "model": str(out)}, {"type": "flat"}], **base), backend="threads"
    )
    evaluate.run_study(_study([{"type": "flat"}], **base), backend="threads")
    assert backends == ["serial", "threads"]


def test_evaluate_without_sb3_entries_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys; from pb_gym.experiments import evaluate as E; "
        "E.run_study(E.StudyConfig(sessions=5, hands=5, systems=[{'type': 'flat'}, "
        "{'type': 'never'}])); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False"


# ------------------------------------------------------------------------------------ validation
def _config(file: str = "ppo-smoke.yaml", /, **changes) -> dict:
    """The shipped train config ``file`` with ``changes`` (dotted keys: ``hyperparameters.gamma``)."""
    data = yaml.safe_load((CONFIGS / file).read_text())
    for key, value in changes.items():
        section = data
        *parents, last = key.split(".")
        for p in parents:
            section = section.setdefault(p, {})
        section[last] = value
    return data


@pytest.mark.parametrize(
    "changes,match",
    [
        (
            {"hyperparameters.n_stepz": 8},
            r"hyperparameters: unknown for PPO: n_stepz; allowed: learning_rate, n_steps, batch_size",
        ),
        ({"hyperparameters.seed": 3}, r"unknown for PPO: seed \(seed: set by the config's own keys"),
        (
            {"algorithm": "DQN", "hyperparameters": {}},
            r"env.action_mode 'multidiscrete' is not allowed for DQN; allowed: discrete",
        ),
        (
            {"algorithm": "SAC"},
            r"algorithm: Input should be 'PPO', 'A2C', 'DQN', 'MaskablePPO' or "
            r"'RecurrentPPO'",
        ),
        (
            {"policy": "MlpPolicy"},
            r"policy 'MlpPolicy': env.observation is dict; use MultiInputPolicy \(or env.observation: flat\)",
        ),
        (
            {"env.observation": "flat"},
            r"policy 'MultiInputPolicy': env.observation is flat \(one Box\); use MlpPolicy",
        ),
        (
            {"env.observation": "flat", "policy": "MlpPolicy", "obs_transform": "composition"},
            r"obs_transform 'composition' reads the Dict observation's fields: set env.observation: dict",
        ),
        ({"policy": "Foo"}, r"policy 'Foo' is not allowed for PPO; allowed: MlpPolicy, MultiInputPolicy"),
        (
            {"env.table": {"unit": 10}},
            r"env.table: unknown key; allowed keys here: rules, side_bets, bankroll",
        ),
        ({"env.decks": 8}, r"env.decks: unknown key; allowed keys here: rules, side_bets, bankroll, unit"),
        ({"env.custom_bets": []}, r"env.custom_bets: unknown key"),
        (
            {"env.stake_levels": [5, 2]},
            r"env: stake_levels=\(5.0, 2.0\) is not allowed; allowed: "
            r"increasing positive numbers",
        ),
        (
            {"env.action_mode": "box"},
            r"env.action_mode 'box' is not allowed for PPO; allowed: multidiscrete, discrete",
        ),
        (
            {"env.action_mode": "cards"},
            r"env.action_mode: Input should be 'discrete', 'multidiscrete' or 'box'",
        ),
        ({"env.bankroll": 5}, r"env: bankroll=5.0 is not allowed; allowed: a number >= table_min \(10\)"),
        (
            {"env.rules.side_bets": ["dragon8"]},
            r"env: side_bets: unknown bet 'dragon8'; "
            r"allowed: player_pair, banker_pair, dragon7, panda8, "
            r"dragon_bonus",
        ),
        ({"evaluation.seed": 0}, r"evaluation.seed \(0\) must differ from the training seed"),
        ({"evaluation.sessions": 0}, r"evaluation.sessions: Input should be greater than or equal to 1"),
        (
            {"evaluation.systems": [{"type": "flat", "bet": "dragon7"}]},
            r"evaluation.systems.0: bet .dragon7. is not offered by these rules",
        ),
        ({"total_timesteps": None}, r"total_timesteps: Input should be a valid integer"),
        ({"n_envs": 0}, r"n_envs: Input should be greater than or equal to 1"),
    ],
)
def test_config_errors_name_the_key(tmp_path, changes, match):
    data = _config(**changes)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=match):
        train.load(path, train.TrainConfig)


@pytest.mark.parametrize(
    "algorithm,changes,match",
    [
        (
            "PPO",
            {"hyperparameters.policy_kwargs": [1]},
            r"hyperparameters.policy_kwargs: \[1\] is not allowed; allowed: a mapping of keyword arguments",
        ),
        (
            "PPO",
            {"hyperparameters.learning_rate": 1e300},
            r"hyperparameters.learning_rate: 1e\+300 is not allowed; allowed: a number > 0 and <= 1",
        ),
        ("PPO", {"hyperparameters.ent_coef": 1e300}, r"hyperparameters.ent_coef: .* <= 100"),
        (
            "PPO",
            {"hyperparameters.vf_coef": float("inf")},
            r"hyperparameters.vf_coef: inf is not allowed; numbers must be finite",
        ),
        (
            "PPO",
            {"hyperparameters.target_kl": "x"},
            r"hyperparameters.target_kl: x is not allowed; allowed: a number > 0 and <= 100, or null",
        ),
        (
            "PPO",
            {"hyperparameters.stats_window_size": -1},
            r"hyperparameters.stats_window_size: -1 is not allowed; allowed: an integer >= 1",
        ),
        (
            "PPO",
            {"hyperparameters.normalize_advantage": "no"},
            r"hyperparameters.normalize_advantage: no is not allowed; allowed: true or false",
        ),
        ("PPO", {"hyperparameters.use_sde": 1}, r"hyperparameters.use_sde: 1 is not allowed; allowed: true"),
        (
            "PPO",
            {"hyperparameters.rollout_buffer_class": "os.system"},
            r"hyperparameters.rollout_buffer_class: .* allowed: null",
        ),
        ("PPO", {"init_abstain": 1e300}, r"init_abstain: Input should be less than or equal to 100"),
        (
            "PPO",
            {"threads": 20000},
            r"threads: 20000 is not allowed; allowed: an integer from 1 to \d+ "
            r"\(this machine's cores\)",
        ),
        (
            "DQN",
            {"hyperparameters.train_freq": 0},
            r"hyperparameters.train_freq: 0 is not allowed; allowed: an integer from 1",
        ),
        ("DQN", {"hyperparameters.train_freq": [2, "hour"]}, r"hyperparameters.train_freq: "),
        (
            "DQN",
            {"hyperparameters.optimize_memory_usage": "yes"},
            r"optimize_memory_usage: yes is not allowed",
        ),
    ],
)
def test_hyperparameters_are_checked_by_type_and_range_naming_the_key(algorithm, changes, match):
    """Checked from the algorithm's signature (a flag is a bool, an integer an integer, a mapping a
    mapping) with finite, sane ranges, before anything runs."""
    with pytest.raises(ConfigError, match=match):
        validate(_config(f"{algorithm.lower()}-smoke.yaml", **changes), train.TrainConfig, "c")


def test_every_shipped_train_config_passes_the_hyperparameter_checks():
    paths = sorted(CONFIGS.glob("*.yaml"))
    assert len(paths) > 3  # (found: an empty folder would pass it)
    for path in paths:
        train.load(path, train.TrainConfig)


def test_hyperparameter_values_rejected_by_sb3_are_config_errors(tmp_path):
    config = validate(_config(**{"hyperparameters.batch_size": 1}), train.TrainConfig, "c")
    with pytest.raises(ConfigError, match=r"hyperparameters: PPO rejects them"):
        train.train(config, tmp_path)


def test_cli_reports_config_errors(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_config(**{"hyperparameters.lr": 1})))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", str(path)])
    assert exit_info.value.code == 2
    assert "unknown for PPO: lr" in capsys.readouterr().err


def test_sessions_longer_than_the_training_episodes_warn(ppo_run):
    """ppo-smoke.yaml trains 40-hand episodes: 41-hand sessions take the policy's hand counter past
    anything it saw in training, and say so; 40-hand sessions do not."""
    import warnings

    out, _ = ppo_run
    learned = [{"type": "sb3", "model": str(out)}]
    with pytest.warns(
        UserWarning,
        match=r"the study's sessions \(41 hands\) are longer than the model's "
        r"training episodes \(40 hands\)",
    ):
        _study(learned, bankroll=1000, sessions=4, hands=41)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*longer than the model's training episodes")
        _study(learned, bankroll=1000, sessions=4, hands=40)


def test_sb3_entry_errors(ppo_run, tmp_path):
    out, _ = ppo_run
    with pytest.raises(ConfigError, match=r"systems.0.sb3.model: no saved model at 'nowhere'"):
        _study([{"type": "sb3", "model": "nowhere"}])
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(out / "model.zip", lonely / "model.zip")
    with pytest.raises(ConfigError, match=r"env.json' is missing"):
        _study([{"type": "sb3", "model": str(lonely)}])
    # rules or limits unlike the training environment's: refused when the config is loaded
    with pytest.raises(
        ConfigError,
        match=r"systems.0 \(model .*\): the study's rules differ .*"
        r"rules.side_bets: study \('dragon7',\), model \(\)",
    ):
        _study([{"type": "sb3", "model": str(out)}], rules={"side_bets": ["dragon7"]})
    with pytest.raises(ConfigError, match=r"table minimum differs .* study 2 unit\(s\), model 1"):
        _study(
            [{"type": "sb3", "model": str(out), "base": 2}],
            table={**TABLE, "minimum": 20},
            bankroll=1000,
        )
    # and by the policy itself, should it meet another table at run time
    policy = learned_agents.Sb3Policy(model=str(out))
    policy.reset(1)
    minus_one = np.full(1, -1, dtype=np.int8)
    view = betting_systems.TableView(
        np.array([100.0]), 500.0, R.Rules(side_bets=("dragon7",)), None, minus_one, minus_one, 1.0
    )
    with pytest.raises(
        learned_agents.ModelMismatch, match=r"rules.side_bets: study \('dragon7',\), model \(\)"
    ):
        policy.check_view(view)
    study = _study([{"type": "sb3", "model": str(out)}], bankroll=2000)
    with pytest.warns(UserWarning, match="starting bankroll"):
        evaluate.run_study(study)


# ---------------------------------------------------------------------------------------- parity
PARITY = [
    dict(
        action_mode="multidiscrete",
        allow_no_bet=True,
        stake_unit="units",
        observation="dict",
        obs_scale="raw",
    ),
    dict(
        action_mode="discrete",
        allow_no_bet=False,
        stake_unit="fraction",
        stake_levels=(0.0001, 0.0005, 0.002),
        observation="dict",
        obs_scale="raw",
    ),
    dict(),  # the env's defaults: discrete actions, the flat scaled Box
]


@pytest.mark.parametrize(
    "interface", PARITY, ids=["multidiscrete", "discrete-forced-fraction", "defaults-flat-scaled"]
)
def test_observations_built_in_the_evaluation_loop_equal_the_environment(tmp_path, monkeypatch, interface):
    """The real evaluation loop (run_study) with a learned-policy entry whose actions are scripted:
    every observation the policy builds equals the one the environment gives for the same hands and
    actions (a 1-deck shoe with a shallow cut card: several reshuffles), and the bankrolls agree."""
    from stable_baselines3 import PPO

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    kwargs = dict(
        decks=1,
        cut_card=14,
        side_bets=("dragon7", "panda8"),
        bankroll=100_000.0,
        unit=10.0,
        table_min=10.0,
        table_max=100.0,
        max_hands=None,
        history=8,
        visible_discards=True,
        **interface,
    )
    cfg = env_config.make_config(**kwargs)

    def fields(obs):  # the flat observation cut into its fields (views), a Dict as it is
        return obs if isinstance(obs, dict) else {k: obs[..., a:b] for k, (a, b) in cfg.obs_offsets.items()}

    policy = "MlpPolicy" if cfg.observation == "flat" else "MultiInputPolicy"
    model = PPO(policy, PuntoBancoSB3VecEnv(2, **kwargs), n_steps=8, batch_size=16)
    learned_agents.save_policy(model, tmp_path, kwargs, "PPO")
    sessions, hands, seed = 6, 45, 11
    study = validate(
        {
            "rules": {"decks": 1, "cut_card": 14, "side_bets": ["dragon7", "panda8"]},
            "table": {"unit": 10, "minimum": 10, "maximum": 100},
            "bankroll": 100_000,
            "sessions": sessions,
            "hands": hands,
            "seed": seed,
            "systems": [{"type": "sb3", "model": str(tmp_path), "name": "scripted"}, {"type": "flat"}],
        },
        evaluate.StudyConfig,
        "parity",
    )
    rng = np.random.default_rng(0)
    seen, acted, first_shoe = [], [], []

    def scripted(self, obs, view):
        if not seen:  # the evaluation's engine state before the first hand
            first_shoe.append(view.shoe.copy())
        seen.append({k: v.copy() for k, v in fields(obs).items()})
        if cfg.action_mode == "multidiscrete":
            actions = np.stack(
                [
                    rng.integers(0, len(cfg.bet_choices), sessions),
                    rng.integers(0, len(cfg.stake_levels), sessions),
                ],
                axis=1,
            )
        else:
            actions = rng.integers(0, cfg.n_actions, sessions)
        acted.append(actions)
        return actions

    monkeypatch.setattr(learned_agents.Sb3Policy, "_act", scripted)
    report = evaluate.run_study(study)
    assert len(seen) == hands

    # the same hands in the environment: its tables dealt from the evaluation's engine state
    venv = PuntoBancoVectorEnv(sessions, autoreset_mode="Disabled", **kwargs)
    venv.reset(seed=0)
    venv.tables.shoe = first_shoe[0]
    assert (venv.tables.shoe.position > 0).all()  # a fresh shoe, burn applied, nothing dealt
    assert (venv.tables.shoe.hands_in_shoe == 0).all()
    obs = fields(observation.split_obs(cfg, observation.write_obs(cfg, venv.tables)))
    shuffles = 0
    for k in range(hands):
        for key in cfg.obs_keys:
            if key == "bankroll":
                np.testing.assert_allclose(seen[k][key], obs[key], rtol=1e-6, err_msg=f"hand {k}")
            else:
                np.testing.assert_array_equal(seen[k][key], obs[key], err_msg=f"hand {k}: {key}")
        obs, *_ = venv.step(acted[k])
        obs = fields(obs)
        shuffles += int(venv.tables.result.shuffled.sum())
    assert shuffles >= sessions  # the bead plate was cleared at new shoes along the way
    final = np.asarray(report["final_bankrolls"]["scripted"])
    np.testing.assert_allclose(final, venv.tables.bankroll * cfg.unit, rtol=1e-9)
    assert report["systems"][0]["hands"] > 0


def test_counts_transform_is_a_counters_linear_ev_estimate():
    from pb_gym import engine, exact

    cfg = env_config.make_config(side_bets=("dragon7", "panda8"))
    state = engine.init(cfg.rules, 3000, seed=5)
    for _ in range(55):  # mid to late shoe
        engine.deal(cfg.rules, state)
    obs = {"shoe": state.unseen.astype(np.float32), "bankroll": np.zeros((3000, 1), np.float32)}
    out = learned_agents.transform_obs("counts", obs, cfg)
    space = learned_agents.transformed_space(
        "counts",
        PuntoBancoVectorEnv(
            num_envs=1, side_bets=("dragon7", "panda8"), observation="dict"
        ).single_observation_space,
    )
    assert out["count"].shape == (3000, len(learned_agents.COUNTED_BETS)) == (3000,) + space["count"].shape
    ev = exact.expected_values(state.unseen, cfg.rules)
    for k, bet in enumerate(learned_agents.COUNTED_BETS):
        assert np.corrcoef(out["count"][:, k], ev[:, R.BETS.index(bet)])[0, 1] > 0.95, bet
    # off the top of the shoe the estimate is the exact full-shoe EV
    full = {"shoe": R.full_shoe(8)[None, :].astype(np.float32)}
    np.testing.assert_allclose(
        learned_agents.transform_obs("counts", full, cfg)["count"][0],
        100
        * exact.expected_values(R.full_shoe(8), cfg.rules)[
            [R.BETS.index(b) for b in learned_agents.COUNTED_BETS]
        ],
        rtol=1e-5,
    )


def test_a_shoe_only_policy_sees_the_shoe_and_the_cards_left_and_replays_on_them(tmp_path):
    """obs_transform: shoe_only drops the bankroll, the hand counters, the bead plate and the last hand
    (they drift over sessions longer than a training episode), in training and in the replay."""
    data = _config(total_timesteps=256, n_envs=8, curve_points=2, obs_transform="shoe_only")
    data["hyperparameters"].update(n_steps=32, batch_size=64, n_epochs=1)
    data["evaluation"].update(sessions=20, hands=30)
    path = tmp_path / "shoe-only.yaml"
    path.write_text(yaml.safe_dump(data))
    result = train.main(str(path), out=str(tmp_path / "run"), as_json=True)
    model = learned_agents.algorithm_class("PPO").load(tmp_path / "run" / "model.zip", device="cpu")
    assert set(model.observation_space.spaces) == set(learned_agents.SHOE_ONLY_KEYS) == {"shoe", "cards_left"}
    learned = result["evaluation"]["systems"][0]
    assert learned["name"] == "PPO (learned)" and result["evaluation"]["hands_dealt"] == 20 * 30
    # the replay reads the same two fields: a study of its own replays the run's held-out study
    policy = learned_agents.Sb3Policy(model=str(tmp_path / "run"))
    assert policy.obs_transform == "shoe_only"  # recorded in env.json
    obs = learned_agents.transform_obs(
        "shoe_only",
        {
            "shoe": np.full((2, 13), 32.0, np.float32),
            "cards_left": np.full((2, 1), 416.0, np.float32),
            "bankroll": np.ones((2, 1), np.float32),
        },
        policy.cfg,
    )
    assert list(obs) == ["shoe", "cards_left"] and np.allclose(obs["shoe"], 0.0, atol=1e-5)


# ------------------------------------------------------------------------------- names and checksums
@pytest.mark.parametrize(
    "name", ["../../x", "/some/other/dir", "a/b", ".hidden", "..", "", "a" * 65, "tab\there"]
)
def test_a_run_name_is_a_name_not_a_path(name):
    with pytest.raises(
        ConfigError,
        match=r"c.yaml: name: .* is not allowed; allowed: a plain name of "
        r"1-64 letters, digits, '.', '_' or '-' that does not start "
        r"with '.' \(no '/', no '..'\)",
    ):
        validate(_config(name=name), train.TrainConfig, "c.yaml")


def test_a_training_run_records_the_sha256_of_every_file(ppo_run):
    import hashlib

    out, result = ppo_run
    meta = json.loads((out / "env.json").read_text())
    assert meta["sha256"] == {
        name: hashlib.sha256((out / name).read_bytes()).hexdigest()
        for name in ("model.zip", "vecnormalize.pkl")
    }
    listed = {}
    for line in (out / "SHA256SUMS").read_text().splitlines():  # sha256sum -c format
        digest, name = line.split("  ")
        listed[name] = digest
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert set(listed) == files - {"SHA256SUMS"}
    assert all(hashlib.sha256((out / n).read_bytes()).hexdigest() == d for n, d in listed.items())
    assert str(out / "SHA256SUMS") in result["written"] and result["model"] == str(out / "model.zip")


def test_a_model_whose_files_changed_since_training_is_refused(ppo_run, tmp_path):
    """A crafted vecnormalize.pkl (a pickle that runs code when loaded) put in a trained model's folder
    is refused, naming the file, before anything is unpickled."""
    import pickle

    out, _ = ppo_run
    model = tmp_path / "model"
    shutil.copytree(out, model, ignore=shutil.ignore_patterns("evaluation"))
    ran = tmp_path / "code-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(ran), "w"))

    (model / "vecnormalize.pkl").write_bytes(pickle.dumps(Payload()))
    learned = [{"type": "sb3", "model": str(model)}]
    with pytest.raises(
        ConfigError,
        match=r"vecnormalize.pkl changed since training \(SHA-256 "
        r"[0-9a-f]{16}\.\.\., recorded in env.json [0-9a-f]{16}\.\.\.\); "
        r"refusing to load it",
    ):
        _study(learned)
    with pytest.raises(ValueError, match=r"vecnormalize.pkl changed since training"):
        learned_agents.Sb3Policy(model=str(model))
    assert not ran.exists()
    # a model saved before the checksums were recorded: refused until someone vouches for it
    shutil.copy(out / "vecnormalize.pkl", model / "vecnormalize.pkl")
    meta = json.loads((model / "env.json").read_text())
    del meta["sha256"]
    (model / "env.json").write_text(json.dumps(meta))
    with pytest.raises(
        ConfigError,
        match=r"env.json records no SHA-256 of model.zip, vecnormalize.pkl "
        r".* python -m pb_gym.agents.learned --trust",
    ):
        _study(learned)
    assert learned_agents.record_checksums(model) == json.loads((out / "env.json").read_text())["sha256"]
    _study(learned)


def test_train_refuses_an_unusable_out_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained"))
    (tmp_path / "notes.md").write_text("mine")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", str(CONFIGS / "ppo-smoke.yaml"), "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "the folder holds files this command does not write (notes.md)" in capsys.readouterr().err


def test_a_resumable_evaluation_is_tied_to_the_model_files_it_plays(ppo_run):
    """The identity of an evaluate run's finished chunks holds the SHA-256 of each learned model's
    files: a model retrained in the same folder is another run, whose chunks are not mixed in."""
    out, _ = ppo_run
    config = _study([{"type": "sb3", "model": str(out)}, {"type": "flat"}])
    assert evaluate._model_checksums(config) == {
        str(out): json.loads((out / "env.json").read_text())["sha256"]
    }


# ------------------------------------------------------------------------------------------ resume
def _tiny(tmp_path, name="tiny.yaml", **evaluation) -> Path:
    """ppo-smoke.yaml cut to 256 training steps and a held-out evaluation of 3 chunks of 20 sessions."""
    data = _config(total_timesteps=256, n_envs=8, curve_points=2)
    data["hyperparameters"].update(n_steps=32, batch_size=64, n_epochs=1)
    data["evaluation"].update({"sessions": 60, "hands": 20, "chunk_sessions": 20, **evaluation})
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _interrupt_after_chunks(monkeypatch, n: int) -> list[int]:
    """Ctrl-C right after the n-th evaluation chunk is kept; returns the indexes of the kept chunks."""
    from pb_gym.experiments.common import chunk_store

    kept: list[int] = []
    save = chunk_store.ChunkStore.save

    def save_then_interrupt(self, chunk, result):
        save(self, chunk, result)
        kept.append(chunk.index)
        if len(kept) == n:
            raise KeyboardInterrupt

    monkeypatch.setattr(chunk_store.ChunkStore, "save", save_then_interrupt)
    return kept


def _computed_chunks(monkeypatch) -> list[int]:
    """The indices of the evaluation chunks computed from now on, in the order they are kept."""
    from pb_gym.experiments.common import chunk_store

    computed: list[int] = []
    save = chunk_store.ChunkStore.save
    monkeypatch.setattr(
        chunk_store.ChunkStore,
        "save",
        lambda self, chunk, result: computed.append(chunk.index) or save(self, chunk, result),
    )
    return computed


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_an_interrupted_evaluation_resumes_without_training_again_bit_for_bit(tmp_path, monkeypatch, capsys):
    """Ctrl-C during the held-out evaluation keeps the trained model and the finished chunks in
    OUT/.partial; the rerun (the same command: resuming is the default) trains nothing, computes only
    the missing chunk, and writes the outputs of an uninterrupted run."""
    import zipfile

    config = _tiny(tmp_path)
    whole = tmp_path / "whole"
    train.main(str(config), out=str(whole), as_json=True)
    out = tmp_path / "out"
    kept = _interrupt_after_chunks(monkeypatch, 2)
    assert cli.main(["train", str(config), "--out", str(out), "--json"]) == 130
    err = capsys.readouterr().err
    assert (
        f"pb-gym: interrupted; the trained model is kept in {out / '.partial'}, with the held-out "
        "evaluation's finished chunks; rerun the same command to finish it without training again"
    ) in err
    partial = out / ".partial"
    assert sorted(p.name for p in out.iterdir()) == [".partial"]  # no outputs yet: nothing half-written
    assert sorted(p.name for p in partial.iterdir()) == [
        "chunk-000000.json.gz",
        "chunk-000001.json.gz",
        "run.json",
        "step-train.json.gz",
        "train",
    ]
    model_digest = learned_agents.file_sha256(partial / "train" / "model.zip")

    monkeypatch.undo()
    computed = _computed_chunks(monkeypatch)
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained again"))
    assert cli.main(["train", str(config), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    assert (
        f"resuming: PPO was trained for 256 timesteps by an interrupted run of this config (kept "
        f"in {partial / 'train'}); not training again"
    ) in captured.err
    assert f"resuming: 2 of 3 chunks already finished in {partial}; computing the other 1" in captured.err
    assert kept == [0, 1] and computed == [2]
    assert not partial.exists()  # removed once the outputs are in place
    result = json.loads(captured.out)
    assert result["model"] == str(out / "model.zip") and result["timesteps"] == 256

    ours, theirs = _files(out), _files(whole)
    assert set(ours) == set(theirs)
    # the kept model is the one in the outputs, and it has the uninterrupted run's weights (SB3's
    # zip also holds the time it was written, so the two zips differ in that member only)
    assert learned_agents.file_sha256(out / "model.zip") == model_digest
    for member in ("policy.pth", "policy.optimizer.pth", "pytorch_variables.pth"):
        assert zipfile.ZipFile(out / "model.zip").read(member) == zipfile.ZipFile(whole / "model.zip").read(
            member
        )
    report, whole_report = (json.loads(f["evaluation/report.json"]) for f in (ours, theirs))
    assert report.pop("timings") and whole_report.pop("timings")
    assert report == whole_report
    differ = {"model.zip", "env.json", "vecnormalize.pkl", "SHA256SUMS", "evaluation/report.json"}
    assert [name for name in sorted(ours) if name not in differ and ours[name] != theirs[name]] == []
    # the manifest covers every file of the resumed run, as it does for an uninterrupted one
    listed = dict(line.split("  ")[::-1] for line in ours["SHA256SUMS"].decode().splitlines())
    assert set(listed) == set(ours) - {"SHA256SUMS"}
    assert all(learned_agents.file_sha256(out / name) == digest for name, digest in listed.items())


def test_a_resume_with_another_config_is_refused_and_no_resume_starts_over(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    _interrupt_after_chunks(monkeypatch, 1)
    assert cli.main(["train", str(_tiny(tmp_path)), "--out", str(out)]) == 130
    monkeypatch.undo()
    capsys.readouterr()
    changed = _tiny(tmp_path, "changed.yaml", seed=1000005)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", str(changed), "--out", str(out), "--json"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"pb-gym train: error: {out / '.partial'} holds 1 finished chunk(s) and the finished "
        "step(s) train of another run (it differs in config.evaluation.seed; run key "
    ) in err
    assert (
        "they will not be mixed with this run's. Rerun with the config they belong to to finish it, "
        "or pass --no-resume to discard them, or choose another --out"
    ) in err
    assert (out / ".partial" / "chunk-000000.json.gz").is_file()  # refused: nothing was touched
    assert cli.main(["train", str(changed), "--out", str(out), "--json", "--no-resume"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["evaluation"]["seed"] == 1000005 and not (out / ".partial").exists()


def test_an_interrupted_training_keeps_nothing_and_says_so(tmp_path, monkeypatch, capsys):
    """Ctrl-C before the first training checkpoint keeps nothing (the message says so), and what it
    left is no run to resume: a run of another config into the same folder is not refused."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "out"
    monkeypatch.setattr(train, "write_curve", interrupted)  # after learning, before the model is kept
    assert cli.main(["train", str(_tiny(tmp_path)), "--out", str(out)]) == 130
    assert (
        "pb-gym: interrupted; while training, before its first checkpoint (one every 5 minutes): no "
        "training was kept; the same command trains again from the start (256 timesteps)"
    ) in capsys.readouterr().err
    assert not (out / ".partial").exists()
    monkeypatch.undo()
    changed = _tiny(tmp_path, "changed.yaml", seed=1000005)
    assert cli.main(["train", str(changed), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["evaluation"]["seed"] == 1000005


def test_an_interrupted_discovery_scoring_resumes_on_the_kept_model(tmp_path, monkeypatch, capsys):
    """Ctrl-C while the trained model is scored against the perfect-information bettor: the rerun
    loads the kept model (same weights, same VecNormalize statistics) and scores it exactly as the
    model in memory was scored by an uninterrupted run."""
    from pb_gym.experiments.benchmark import discovery

    path = _tiny(tmp_path, sessions=20)
    data = yaml.safe_load(path.read_text())
    data["env"]["rules"]["side_bets"] = ["dragon7", "panda8"]
    data["discovery"] = {
        "bets": ["dragon7", "panda8"],
        "tables": 4,
        "hands": 40,
        "curve_points": 1,
        "curve_tables": 2,
        "curve_hands": 10,
        "count_training_shoes": 10,
    }
    path.write_text(yaml.safe_dump(data))
    whole, out = tmp_path / "whole", tmp_path / "out"
    train.main(str(path), out=str(whole), as_json=True)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(discovery, "plot_calibration", interrupted)
    assert cli.main(["train", str(path), "--out", str(out)]) == 130
    assert (
        f"pb-gym: interrupted; while scoring the trained model (discovery): the trained model is kept in "
        f"{out / '.partial'}; rerun the same command"
    ) in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained again"))
    assert cli.main(["train", str(path), "--out", str(out), "--json"]) == 0
    ours, theirs = _files(out / "discovery"), _files(whole / "discovery")
    scored, whole_scored = (json.loads(f.pop("discovery.json")) for f in (ours, theirs))
    assert scored.pop("seconds") >= 0 and whole_scored.pop("seconds") >= 0
    # the training's wall time (the rerun's: the one kept from the training before the stop)
    assert scored.pop("training_seconds") > 0 and whole_scored.pop("training_seconds") > 0
    # (and each exact-curve point's training seconds, wall and CPU: times of two trainings)
    timed = ("training_seconds", "training_cpu_seconds")
    for result, files in ((scored, ours), (whole_scored, theirs)):
        for row in result["curve"]:
            assert all(row.pop(key) >= 0 for key in timed)
        lines = [line.split(",") for line in files.pop("learning_curve_exact.csv").decode().splitlines()]
        columns = {lines[0].index(key) for key in timed}
        files["learning_curve_exact.csv"] = repr(
            [[v for i, v in enumerate(line) if i not in columns] for line in lines]
        ).encode()
    assert scored == whole_scored and scored["hands"] == 160
    assert ours == theirs  # the text report, calibration plot, exact learning curve


def test_a_chunk_failing_twice_keeps_the_trained_model(tmp_path, monkeypatch, capsys):
    """An evaluation chunk that fails twice stops the run (exit status 1); the message says that the
    trained model is kept, and the rerun evaluates it without training again."""
    out = tmp_path / "out"
    config = _tiny(tmp_path)
    chunk_tasks.lose_evaluate_chunk(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", str(config), "--out", str(out)])
    assert exit_info.value.code == 1
    assert (
        f"failed twice; the run is stopped and no report was written. Last error: RuntimeError: "
        f"worker lost. 1 finished chunk(s) are kept in {out / '.partial'}: rerun the same command "
        f"to compute only the others. The trained model is kept in {out / '.partial'}: rerun the "
        "same command to evaluate it without training again"
    ) in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained again"))
    assert cli.main(["train", str(config), "--out", str(out), "--json"]) == 0
    assert (out / "evaluation" / "report.json").is_file() and not (out / ".partial").exists()


def test_a_kept_model_that_changed_is_trained_again_and_its_chunks_discarded(tmp_path, monkeypatch, capsys):
    """The kept training step records the SHA-256 of its files: one changed since (or missing) means
    training again, and the evaluation chunks made with the old model are not mixed in."""
    out = tmp_path / "out"
    config = _tiny(tmp_path)
    _interrupt_after_chunks(monkeypatch, 2)
    assert cli.main(["train", str(config), "--out", str(out)]) == 130
    monkeypatch.undo()
    with open(out / ".partial" / "train" / "learning_curve.csv", "a") as handle:
        handle.write("\n")
    computed = _computed_chunks(monkeypatch)
    capsys.readouterr()
    assert cli.main(["train", str(config), "--out", str(out), "--json"]) == 0
    assert (
        f"resuming: the kept train step in {out / '.partial'} is not whole (learning_curve.csv "
        "changed since it was kept); doing it again"
    ) in capsys.readouterr().err
    assert computed == [0, 1, 2]


# ----------------------------------------------------------------------------------- custom bets
TIE_ON_7 = {
    "name": "tie_on_7",
    "title": "Tie on 7",
    "source": "my casino",
    "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 45}],
}


def test_a_custom_bet_trains_saves_and_evaluates(tmp_path, capsys):
    """A user bet given in env.side_bets is a column of the training env, recorded in
    env.json; the held-out evaluation and a later `pb-gym evaluate` with the same custom_bets replay it,
    and a study whose bet of that name pays otherwise is refused."""
    data = _config(
        total_timesteps=256,
        n_envs=8,
        curve_points=2,
        **{"env.side_bets": [TIE_ON_7]},
    )
    data["hyperparameters"].update(n_steps=32, batch_size=64, n_epochs=1)
    data["evaluation"].update(
        sessions=20, hands=20, systems=[{"type": "flat", "bet": "tie_on_7", "name": "flat tie on 7"}]
    )
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    result = train.main(str(path), out=str(out), as_json=True)
    assert [s["name"] for s in result["evaluation"]["systems"]][-1] == "flat tie on 7"
    meta = json.loads((out / "env.json").read_text())
    (recorded,) = meta["env_kwargs"]["side_bets"]  # the user's bet, its definition in full
    assert (
        catalog.bet_from_dict(recorded).column().tolist() == catalog.bet_from_dict(TIE_ON_7).column().tolist()
    )
    assert recorded["name"] == "tie_on_7" and recorded["rows"][0]["pays"] == 45
    assert meta["env_kwargs"]["rules"]["side_bets"] == []
    assert learned_agents.training_config(out).bets.columns[-1] == "tie_on_7"
    study = {
        "name": "replay",
        "rules": {"decks": 8, "side_bets": ["tie_on_7"]},
        "custom_bets": [TIE_ON_7],
        "table": TABLE,
        "bankroll": 1000,
        "sessions": 20,
        "hands": 20,
        "seed": 1000003,
        "systems": [{"type": "sb3", "model": str(out), "name": "PPO (learned)"}],
    }
    replay = evaluate.run_study(validate(study, evaluate.StudyConfig), progress=False)
    learned = result["evaluation"]["systems"][0]
    assert replay["systems"][0]["net"] == learned["net"]
    other = {**TIE_ON_7, "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 30}]}
    from pb_gym.experiments.common.scale import ChunkError

    with pytest.raises(
        ChunkError,
        match=r"ModelMismatch: .*'tie_on_7' pays otherwise than the one the "
        r"model was trained on",
    ):
        evaluate.run_study(validate({**study, "custom_bets": [other]}, evaluate.StudyConfig), progress=False)


@pytest.mark.parametrize(
    "custom,match",
    [
        ([{"name": "bad", "rows": [{"when": {"winner": "tie"}, "pays": "lots"}]}], r"env: .*'bad'"),
        (
            [{"name": "banker", "rows": [{"when": {"winner": "tie"}, "pays": 8}]}],
            r"env: .*may not be called 'banker'",
        ),
        ({"name": "x"}, r"env.side_bets: Input should be a valid list"),
    ],
)
def test_a_bad_custom_bet_is_a_clear_error(tmp_path, custom, match):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_config(**{"env.side_bets": custom})))
    with pytest.raises(ConfigError, match=match):
        train.main(str(path), out=str(tmp_path / "out"), as_json=True)


# ------------------------------------------------------------------- training checkpoints (mid-run)
def _train_with_stop(tmp_path, monkeypatch, config, stop_after: int | None):
    """Train ``config`` into a fresh store with a checkpoint at every rollout; Ctrl-C right after the
    ``stop_after``-th checkpoint is kept, then the same call again (it continues from there). Returns
    the final ``train`` result and the timesteps of the checkpoints kept."""
    from pb_gym.experiments.common import chunk_store
    from pb_gym.experiments.train import checkpoint

    store = chunk_store.ChunkStore(tmp_path / ".partial", {"test": "checkpoint"})
    saved: list[int] = []
    save = checkpoint.save

    def save_then_stop(store_, model, callbacks, seconds):
        folder = save(store_, model, callbacks, seconds)
        saved.append(model.num_timesteps)
        if len(saved) == stop_after:
            raise KeyboardInterrupt
        return folder

    monkeypatch.setattr(checkpoint, "save", save_then_stop)
    if stop_after is not None:
        with pytest.raises(KeyboardInterrupt):
            train.train(config, tmp_path / "first", store=store, checkpoint_minutes=1e-9)
        assert checkpoint.latest(store)["timesteps"] == saved[-1]
    result = train.train(config, tmp_path / "out", store=store, checkpoint_minutes=1e-9)
    return result, saved


def _same_training(a: dict, b: dict) -> None:
    import torch

    assert a["timesteps"] == b["timesteps"]
    for curve in ("curve", "exact_curve"):  # (as JSON text: exact floats, and NaN equal to NaN)
        # (each exact-curve point's training seconds, wall and CPU: measured, never the same twice)
        timed = ("training_seconds", "training_cpu_seconds")
        rows_a, rows_b = ([{k: v for k, v in r.items() if k not in timed} for r in x[curve]] for x in (a, b))
        assert json.dumps(rows_a) == json.dumps(rows_b)
    for row in a["exact_curve"]:
        assert row["training_seconds"] >= 0 and row["training_cpu_seconds"] >= 0
    params_a, params_b = a["model_object"].get_parameters(), b["model_object"].get_parameters()
    assert params_a.keys() == params_b.keys()
    for part in params_a:  # the policy's weights and the optimizer's state, bit for bit
        for key, value in params_a[part].items():
            other = params_b[part][key]
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, other), (part, key)
    norm_a, norm_b = a["normalizer"], b["normalizer"]
    assert (norm_a is None) == (norm_b is None)
    if norm_a is not None:  # one running mean / variance, or one per key of a Dict observation
        rms_a, rms_b = norm_a.obs_rms, norm_b.obs_rms
        pairs = [(rms_a[k], rms_b[k]) for k in rms_a] if isinstance(rms_a, dict) else [(rms_a, rms_b)]
        for one, other in pairs:
            np.testing.assert_array_equal(one.mean, other.mean)
            np.testing.assert_array_equal(one.var, other.var)
            assert one.count == other.count


@pytest.mark.parametrize(
    "name,stop_after", [("ppo-smoke.yaml", 2), ("dqn-smoke.yaml", 40), ("discover-smoke.yaml", 2)]
)
def test_an_interrupted_training_continues_from_its_checkpoint_bit_for_bit(
    tmp_path, monkeypatch, name, stop_after
):
    """Ctrl-C in the middle of training, then the same call again: it loads the last checkpoint (the
    model, DQN's replay buffer, the tables' shoes and random streams, the normalizer, the random
    generators, the learning curves, the exact one of a discovery run included) and trains the rest:
    the weights, the optimizer state, the normalizer's statistics and the curves equal those of a run
    that never stopped."""
    data = yaml.safe_load((CONFIGS / name).read_text())
    if "discovery" in data:  # (cut to 4 rollouts and a small exact curve)
        data["total_timesteps"] = 4 * data["n_envs"] * data["hyperparameters"]["n_steps"]
        data["discovery"].update(curve_tables=8, curve_hands=50)
    config = validate(data, train.TrainConfig, name)
    straight, _ = _train_with_stop(tmp_path / "straight", monkeypatch, config, None)
    resumed, saved = _train_with_stop(tmp_path / "stopped", monkeypatch, config, stop_after)
    assert 0 < saved[stop_after - 1] < config.total_timesteps
    _same_training(straight, resumed)


def _two_rollouts(tmp_path) -> Path:
    """The tiny config trained for two rollouts of 8 x 32 steps (a checkpoint at the second)."""
    path = _tiny(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["total_timesteps"] = 512
    path.write_text(yaml.safe_dump(data))
    return path


def _stop_after_the_first_checkpoint(monkeypatch) -> None:
    """Ctrl-C right after the training's first checkpoint is kept."""
    from pb_gym.experiments.train import checkpoint

    save = checkpoint.save

    def save_then_stop(*args, **kwargs):
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "save", save_then_stop)


def test_an_interrupted_training_run_says_where_it_continues_and_does(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    _stop_after_the_first_checkpoint(monkeypatch)
    path = _two_rollouts(tmp_path)
    assert cli.main(["train", str(path), "--out", str(out), "--checkpoint-minutes", "1e-9"]) == 130
    err = capsys.readouterr().err
    assert (
        "pb-gym: interrupted; while training: its checkpoint at 256 of 512 timesteps is kept in "
        f"{out / '.partial'}; rerun the same command"
    ) in err
    monkeypatch.undo()
    assert cli.main(["train", str(path), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    assert "resuming: PPO continues from its checkpoint at 256 of 512 timesteps" in captured.err
    result = json.loads(captured.out)
    assert result["timesteps"] == 512 and not (out / ".partial").exists()


def _stopped_after_a_checkpoint(tmp_path, monkeypatch, config):
    """Train ``config`` with a checkpoint at every rollout, Ctrl-C right after the first is kept;
    returns the store that keeps it."""
    from pb_gym.experiments.common import chunk_store

    store = chunk_store.ChunkStore(tmp_path / ".partial", {"test": "stopped"})
    _stop_after_the_first_checkpoint(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        train.train(config, tmp_path / "stopped", store=store, checkpoint_minutes=1e-9)
    monkeypatch.undo()
    return store


def test_a_changed_checkpoint_is_not_loaded(tmp_path, monkeypatch, capsys):
    from pb_gym.experiments.train import checkpoint

    config = train.load(_two_rollouts(tmp_path), train.TrainConfig)
    store = _stopped_after_a_checkpoint(tmp_path, monkeypatch, config)
    kept = checkpoint.latest(store)
    with open(kept["path"] / checkpoint.STATE_FILE, "ab") as handle:
        handle.write(b"\0")
    assert checkpoint.latest(store) is None
    assert "the training checkpoint in" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_checkpoint_minutes_must_be_a_number_of_minutes(value, capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "x.yaml", "--checkpoint-minutes", value])
    assert (
        f"--checkpoint-minutes: {value!r} is not allowed; allowed: a number of minutes >= 0"
        in capsys.readouterr().err
    )


def test_a_checkpoint_that_cannot_be_written_does_not_stop_training(tmp_path, monkeypatch, capsys):
    """A full disk while a checkpoint is written: a warning, no half-written checkpoint, and the
    training goes on to the end."""
    from pb_gym.experiments.common import chunk_store
    from pb_gym.experiments.train import checkpoint

    config = train.load(_two_rollouts(tmp_path), train.TrainConfig)
    store = chunk_store.ChunkStore(tmp_path / ".partial", {"test": "full disk"})

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "open", disk_full, raising=False)  # the checkpoint's state.pkl only
    result = train.train(config, tmp_path / "out", store=store, checkpoint_minutes=1e-9)
    assert result["timesteps"] == 512
    assert (
        "warning: could not keep a training checkpoint in "
        f"{store.directory} ([Errno 28] No space left on device); training goes on"
    ) in capsys.readouterr().err
    assert checkpoint.latest(store) is None and not list(store.directory.glob("checkpoint_*"))


def test_discovery_scores_any_bet_the_table_offers():
    """discovery.bets may name a catalog side bet the table offers (configs/train/discover-catalog.yaml);
    one it does not offer is refused, the offered ones listed."""
    config = train.load(CONFIGS / "discover-catalog.yaml", train.TrainConfig)
    assert config.discovery.bets == ["three_giving_eight", "egalite_7", "egalite_0"]
    data = _config("discover-catalog.yaml", **{"discovery.bets": ["egalite_9"]})
    with pytest.raises(
        ConfigError,
        match=r"discovery.bets: 'egalite_9' is not offered by env.rules; "
        r"offered: banker, player, tie, three_giving_eight, egalite_7, "
        r"egalite_0",
    ):
        validate(data, train.TrainConfig, "discover-catalog.yaml")


def test_a_checkpoint_that_cannot_be_loaded_trains_from_the_start(tmp_path, monkeypatch, capsys):
    """A whole checkpoint that the installed SB3 or torch cannot load (e.g. written by another
    version): one line says so, and training starts again, as a run with no checkpoint would."""
    from pb_gym.experiments.train import checkpoint

    config = train.load(_two_rollouts(tmp_path), train.TrainConfig)
    straight = train.train(config, tmp_path / "straight")
    store = _stopped_after_a_checkpoint(tmp_path, monkeypatch, config)

    def unloadable(*args, **kwargs):
        raise ValueError("written by another version")

    monkeypatch.setattr(checkpoint, "load", unloadable)
    again = train.train(config, tmp_path / "b", store=store)
    assert (
        "could not be loaded (ValueError: written by another version); training from the start"
        in capsys.readouterr().err
    )
    _same_training(straight, again)


def test_a_one_shoe_policy_is_evaluated_on_single_shoes_unless_told_otherwise():
    """discover*.yaml train on one-shoe episodes, and their held-out sessions are single shoes too
    (evaluation.one_shoe follows env.one_shoe). A config that asks for sessions across shoes gets a
    note: a DQN model bet 84% of hands there against 66% in its own episodes."""
    config = train.load(CONFIGS / "discover-all-dqn.yaml", train.TrainConfig)
    study = train.study_data(config, None)
    assert (study["one_shoe"], study["hands"]) == (True, 101)  # ceil((416 - 14) / 4): all a shoe deals
    assert train.episode_note(config) is None
    sizing = train.load(
        CONFIGS / "discover-sizing.yaml", train.TrainConfig
    )  # 1,000-hand sessions, on purpose
    assert train.study_data(sizing, None)["one_shoe"] is False
    assert train.episode_note(sizing) == (
        "NOTE: the policy was trained on one-shoe episodes (env.one_shoe), but the held-out sessions "
        "(evaluation.one_shoe: false) play up to 1000 hands, across shoes (a shoe deals at most 101): "
        "there its episode counters take values it never saw, and it may bet differently than in its "
        "own episodes."
    )
    assert train.episode_note(train.load(CONFIGS / "ppo-smoke.yaml", train.TrainConfig)) is None
    # a policy that sees only the shoe has no episode counter to leave its training range
    assert train.episode_note(train.load(CONFIGS / "discover-sizing-shoe.yaml", train.TrainConfig)) is None


def test_profit_per_hand_is_total_profit_over_hands_dealt_when_sessions_differ_in_length():
    """One-shoe sessions deal different numbers of hands: the figure is the ratio of sums with its
    ratio-estimator interval, and with equal sessions it is the plain mean per hand as before."""
    rng = np.random.default_rng(3)
    hands = rng.integers(70, 84, size=400).astype(float)
    learned = rng.normal(0.5, 10.0, 400) * np.sqrt(hands)
    flat = rng.normal(-0.1, 10.0, 400) * np.sqrt(hands)
    report = {
        "bankroll": 1000.0,
        "session_hands": hands,
        "table": {"minimum": 10.0},
        "final_bankrolls": {"learned": 1000.0 + learned, "flat": 1000.0 + flat},
        "systems": [
            {"name": "learned", "wagered": 5000.0, "hands": 300},
            {"name": "flat", "wagered": 9000.0, "hands": 900},
        ],
    }
    rows = {r["name"]: r for r in train.profit_per_hand(report)}
    assert rows["learned"]["profit_per_hand"] == pytest.approx(learned.sum() / hands.sum(), rel=1e-12)
    assert rows["flat"]["learned_minus_this"] == pytest.approx((learned - flat).sum() / hands.sum())
    assert rows["flat"]["bet_share"] == 900 / hands.sum()
    assert rows["learned"]["ci95"] == pytest.approx(stats.ratio_ci(learned, hands)["ci95"], rel=1e-9)
    assert rows["learned"]["learned_minus_this_ci95"] == [0.0, 0.0]
    growth = np.log((1000.0 + learned) / 1000.0).sum() / hands.sum()
    assert rows["learned"]["log_growth_per_hand"] == pytest.approx(growth, rel=1e-12)
    ruined = dict(
        report, final_bankrolls={"learned": np.r_[0.0, np.full(399, 1000.0)], "flat": np.full(400, 1000.0)}
    )
    assert train.profit_per_hand(ruined)[0]["log_growth_per_hand"] == pytest.approx(
        np.log(5.0 / 1000.0) / hands.sum()
    )  # a ruined session counts as half the table minimum
    per = learned / 80  # equal sessions: the mean per hand and its standard error, as before
    mean, se = stats.mean_se(per)
    row = train.profit_per_hand(dict(report, session_hands=np.full(400, 80.0)))[0]
    assert row["profit_per_hand"] == pytest.approx(mean, rel=1e-12)
    assert row["ci95"] == pytest.approx(stats.normal_ci(mean, se), rel=1e-9)


def test_a_one_shoe_training_is_evaluated_on_whole_shoes_and_a_study_across_shoes_warns(tmp_path):
    """env.one_shoe: the held-out sessions end with their shoe, profit per hand is over the hands
    those shoes dealt; replaying the model in a study whose sessions cross shoes warns."""
    data = _config(total_timesteps=256, n_envs=8, curve_points=2)
    data["hyperparameters"].update(n_steps=32, batch_size=64, n_epochs=1)
    data["env"].update(one_shoe=True, max_hands=None)
    data["evaluation"] = {"sessions": 40, "chunk_sessions": 20}
    path = tmp_path / "one-shoe.yaml"
    path.write_text(yaml.safe_dump(data))
    result = train.main(str(path), out=str(tmp_path / "run"), as_json=True)
    held_out = result["evaluation"]
    most = R.Rules().most_hands_per_shoe  # 8 decks, the cut card 14 cards from the end
    assert held_out["one_shoe"] and held_out["hands_per_session"] == most == 101
    assert 40 * 70 < held_out["hands_dealt"] < 40 * most  # a shoe of 402 cards deals ~80 hands
    flat = next(s for s in held_out["systems"] if s["name"] == "flat banker")
    assert flat["hands"] == flat["hands_dealt"] == held_out["hands_dealt"]
    profit = {r["name"]: r for r in result["profit_per_hand"]}
    assert profit["flat banker"]["bet_share"] == 1.0
    assert profit["flat banker"]["profit_per_hand"] == pytest.approx(
        flat["net"] / held_out["hands_dealt"], rel=1e-12
    )
    study = {
        "rules": data["env"]["rules"],
        "table": {
            "unit": data["env"]["unit"],
            "minimum": data["env"]["table_min"],
            "maximum": data["env"]["table_max"],
        },
        "bankroll": data["env"]["bankroll"],
        "sessions": 4,
        "hands": 10,
        "systems": [{"type": "sb3", "model": str(tmp_path / "run")}],
    }
    with pytest.warns(
        UserWarning,
        match=r"trained on one-shoe episodes \(one_shoe\) but the study's "
        r"sessions run across shoes",
    ):
        evaluate.run_study(validate(study, evaluate.StudyConfig, "s"))


def test_training_leaves_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    """SB3's default logger made an empty $TMPDIR/SB3-<time>/ per run; torch's compiler caches go
    to pb-gym's cache (~/.cache/pb-gym/torchinductor), not $TMPDIR."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    config = train.load(_tiny(tmp_path), train.TrainConfig)
    train.train(config, tmp_path / "out")
    assert list(scratch.iterdir()) == []
