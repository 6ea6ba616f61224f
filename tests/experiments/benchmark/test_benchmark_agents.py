"""The benchmark scorer with learned agents: an SB3 model, a ``pb-gym train`` model (the same figures
as train's ``discovery:`` scoring on the same hands) and ``pb-gym score`` from the command line."""

from __future__ import annotations

import json
import sys

import gymnasium
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from pb_gym import benchmark  # noqa: E402

from repo_paths import ROOT  # noqa: E402

CONFIGS = ROOT / "configs" / "train"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """discover.yaml's settings trained for 4,096 steps from a policy that bets on most hands (no
    init_abstain): a model whose decisions vary, saved as pb-gym train saves it."""
    from pb_gym.experiments import train
    from pb_gym.experiments.common import yaml_config

    config = yaml_config.load(CONFIGS / "discover.yaml", train.TrainConfig)
    config = config.model_copy(
        update={
            "total_timesteps": 4096,
            "n_envs": 64,
            "curve_points": 1,
            "init_abstain": None,
            "evaluation": None,
            "discovery": config.discovery.model_copy(update={"curve_points": 0}),
        }
    )
    out = tmp_path_factory.mktemp("discover-tiny")
    result = train.train(config, out)
    return config, out, result


def test_a_train_model_scores_the_same_figures_as_trains_discovery_scoring(trained):
    from pb_gym.experiments import train
    from pb_gym.experiments.benchmark import discovery, score

    config, out, result = trained
    policy = train.make_policy(config, result["model_object"], result["normalizer"])
    seed, tables, hands = 2_000_003, 16, 300
    found = discovery.score(
        policy, config.env.kwargs(), config.discovery.bets, tables, hands, seed, calibration=False
    )
    scored = benchmark.score(
        score.model_policy(out, "pb_gym/Discover-v0"), "pb_gym/Discover-v0", tables, hands, seed
    )
    learned, perfect = found["systems"]["learned"], found["systems"]["perfect"]
    assert 0.2 < scored["bet_rate"]["estimate"] < 1  # the model bets, and not on every hand
    assert scored["hands"] == found["hands"] == tables * hands and scored["shoes"] == found["shoes"]
    # the same bits: the same hands, the same decisions, the same statistics
    assert scored["exact_profit_per_hand"] == learned["exact_profit_per_hand"]
    assert scored["realized_profit_per_hand"] == learned["realized_profit_per_hand"]
    assert scored["bet_rate"] == learned["bet_rate"]
    assert scored["perfect_profit_per_hand"] == perfect["exact_profit_per_hand"]
    assert scored["perfect_realized_profit_per_hand"] == perfect["realized_profit_per_hand"]
    assert scored["regret_per_hand"] == found["regret_exact"]
    share = found["share_of_perfect_exact"]
    assert scored["normalized_score"]["estimate"] == share["estimate"]
    assert scored["normalized_score"]["ci95"] == share["ci95"]


def test_a_model_of_another_table_is_refused(trained):
    from pb_gym.experiments.benchmark import score

    _, out, _ = trained
    with pytest.raises(
        ValueError,
        match=r"trained on another table than pb_gym/DiscoverCatalog-v0's: "
        r"rules .*extra_bets",
    ):
        score.model_policy(out, "DiscoverCatalog-v0")


def test_pb_gym_score_scores_a_model_folder_and_a_module_callable(trained, tmp_path, monkeypatch, capsys):
    from pb_gym.experiments import cli
    from pb_gym.experiments.benchmark import score

    _, out, _ = trained
    assert (
        cli.main(["score", str(out), "--task", "Discover-v0", "--tables", "8", "--hands", "100", "--json"])
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    direct = benchmark.score(score.model_policy(out, "Discover-v0"), "Discover-v0", 8, 100)
    assert printed["normalized_score"] == direct["normalized_score"]
    assert printed["exact_profit_per_hand"] == direct["exact_profit_per_hand"]
    (tmp_path / "my_counter.py").write_text(
        "import numpy as np\n"
        "from pb_gym import benchmark\n"
        "perfect = benchmark.perfect_policy('pb_gym/Discover-v0')\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.main(["score", "my_counter:perfect", "--tables", "8", "--hands", "100", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "normalized score (policy / perfect, exact): +1.0000 [+1.0000, +1.0000]" in text
    with pytest.raises(SystemExit) as stop:
        cli.main(["score", "my_counter:missing", "--tables", "8", "--hands", "1"])
    assert stop.value.code == 2
    assert "'my_counter' has no attribute 'missing'" in capsys.readouterr().err


def test_an_sb3_model_trained_on_the_registered_task_is_scored():
    from stable_baselines3 import PPO

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv
    from pb_gym.envs import tasks

    single = gymnasium.make("pb_gym/Discover-v0")  # the registered task, as any SB3 user builds it
    PPO("MlpPolicy", single, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu").learn(64)
    vector = PuntoBancoSB3VecEnv(16, **tasks.get_task("Discover-v0").kwargs)  # the many-table adapter
    model = PPO("MlpPolicy", vector, n_steps=16, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(512)
    result = benchmark.score(
        lambda obs: model.predict(obs, deterministic=True)[0], "Discover-v0", tables=8, hands=100, seed=4
    )
    assert result["hands"] == 800
    exact = result["exact_profit_per_hand"]["estimate"]
    perfect = result["perfect_profit_per_hand"]["estimate"]
    assert result["normalized_score"]["estimate"] == pytest.approx(exact / perfect)
    assert result["regret_per_hand"]["estimate"] == pytest.approx(perfect - exact)
    assert 0.0 <= result["bet_rate"]["estimate"] <= 1.0
    assert np.isfinite(result["realized_profit_per_hand"]["estimate"])


def test_the_cleanrl_style_example_learns_and_is_scored(monkeypatch):
    """examples/cleanrl_ppo.py (PPO written out over the native vector env, no SB3) at a small size:
    300k steps (about 10 s) already find most of the edge (0 is never betting; the full 1.5M-step run
    reaches about 0.93)."""
    import importlib.util

    path = ROOT / "examples" / "cleanrl_ppo.py"
    spec = importlib.util.spec_from_file_location("cleanrl_ppo", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "cleanrl_ppo", example)  # (its dataclass looks itself up there)
    spec.loader.exec_module(example)
    result = example.main(["--total-timesteps", "300000", "--score-tables", "16", "--score-hands", "300"])
    assert result["timesteps"] == 299_008 and result["training_seconds"] > 0
    assert result["hands"] == 16 * 300
    assert 0.5 < result["normalized_score"]["estimate"] <= 1.0
    assert result["bet_rate"]["estimate"] < 0.3  # it learned to sit out most hands
