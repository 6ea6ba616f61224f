"""Every ecosystem path with pb-gym's defaults: Gymnasium's registration, episode limit, vectorization
modes and observation wrappers; stable-baselines3's make_vec_env / SubprocVecEnv (every start method),
PPO / A2C / DQN with MlpPolicy, tensorboard_log; RecordVideo; RL Zoo's train, enjoy and record_video
with its defaults and with the shipped hyperparameters (configs/rlzoo/). Runs are a few hundred steps:
they check that each path works and agrees with the environment, not what an agent learns."""

import json
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from pb_gym.envs import ENV_ID, MAX_EPISODE_STEPS, PuntoBancoEnv, PuntoBancoVectorEnv

from repo_paths import ROOT, run_python  # noqa: E402

NO_BET = 0  # action 0 of the default Discrete space: never ruined, so only the hand limit ends episodes


def run_script(code: str, cwd: Path, timeout: float = 300):
    """Run ``code`` as a script file (as users run theirs: spawn / forkserver children re-import it)."""
    script = cwd / "script.py"
    script.write_text(textwrap.dedent(code))
    out = run_python(str(script), cwd=cwd, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


# ------------------------------------------------------------------------------ episode length
def test_registered_episode_limit_is_gymnasiums_time_limit():
    env = gym.make(ENV_ID)
    assert env.spec.max_episode_steps == MAX_EPISODE_STEPS == 100
    assert env.unwrapped.config.max_hands is None  # the env's own limit is off: TimeLimit ends it
    for limit in (100, 300):
        env = gym.make(ENV_ID, max_episode_steps=limit) if limit != 100 else gym.make(ENV_ID)
        assert env.spec.max_episode_steps == limit
        env.reset(seed=0)
        for hand in range(1, limit + 1):
            _, _, terminated, truncated, _ = env.step(NO_BET)
            assert not terminated and truncated == (hand == limit)
    # the env's own max_hands, when given, also applies: the first limit reached truncates
    env = gym.make(ENV_ID, max_hands=30)
    env.reset(seed=0)
    assert [env.step(NO_BET)[3] for _ in range(30)] == [False] * 29 + [True]
    # built directly, max_hands (default 100) is the limit
    direct = PuntoBancoEnv()
    assert direct.spec is None and direct.config.max_hands == 100


# ------------------------------------------------------------------------- Gymnasium vectorization
def test_every_gymnasium_vectorization_mode_deals_the_same_hands():
    """make_vec's native vector env, SyncVectorEnv and AsyncVectorEnv (fork, forkserver and spawn
    workers) with the defaults: the same observations, rewards and flags for the same seed and
    actions, through an episode end at the registered 100 hands and the NEXT_STEP autoreset."""
    n, steps = 2, 103
    actions = np.random.default_rng(0).integers(0, 36, size=(steps, n))
    actions[:, 1] = NO_BET  # table 1 never bets: it must reach the hand limit
    runs = {}
    modes = [
        ("vector_entry_point", {}),
        ("sync", {}),
        ("async", {"context": "fork"}),
        ("async", {"context": "forkserver"}),
        ("async", {"context": "spawn"}),
    ]
    for mode, vector_kwargs in modes:
        venv = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode=mode, vector_kwargs=vector_kwargs)
        assert venv.observation_space.shape == (n, 47)
        assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        obs, _ = venv.reset(seed=7)
        trace = [obs]
        for a in actions:
            obs, reward, terminated, truncated, _ = venv.step(a)
            trace += [obs, reward, terminated, truncated]
        venv.close()
        runs[f"{mode} {vector_kwargs.get('context', '')}"] = trace
    names = list(runs)
    native = runs[names[0]]
    truncated = np.array([x for x in native[4::4]])
    assert truncated[99, 1] and not truncated[:99, 1].any()  # the 100th hand ends table 1's episode
    for name in names[1:]:
        for k, (a, b) in enumerate(zip(native, runs[name], strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"{name}: item {k}")


def test_make_vec_autoreset_modes_are_options():
    venv = gym.make_vec(ENV_ID, num_envs=2, autoreset_mode="SameStep", max_episode_steps=3)
    assert isinstance(venv, PuntoBancoVectorEnv) and venv.autoreset_mode == AutoresetMode.SAME_STEP
    venv.reset(seed=0)
    for _ in range(3):
        obs, _, _, truncated, info = venv.step(np.zeros(2, np.int64))
    assert truncated.all() and info["_final_obs"].all()
    assert (obs[:, 22] == 0).all()  # already reset: hand counter 0
    assert (np.stack(info["final_obs"])[:, 22] == np.float32(3 / 100)).all()


# ------------------------------------------------------------------------- observation wrappers
def test_normalize_observation_single_and_vector():
    """Gymnasium's NormalizeObservation on the default Box: its running mean is the mean of the
    observations it saw (exact up to RunningMeanStd's 1e-4 prior count), single and vector."""
    env = gym.wrappers.NormalizeObservation(gym.make(ENV_ID))
    seen = []
    obs, _ = env.reset(seed=1)
    seen.append(env.unwrapped._obs())
    for a in np.random.default_rng(1).integers(0, 36, 150):
        obs, *_, terminated, truncated, _ = env.step(a)
        seen.append(env.unwrapped._obs())
        if terminated or truncated:
            env.reset()
            seen.append(env.unwrapped._obs())
    np.testing.assert_allclose(env.obs_rms.mean, np.mean(seen, axis=0), rtol=1e-3, atol=1e-5)
    assert np.isfinite(obs).all() and obs.shape == (47,)

    venv = gym.make_vec(ENV_ID, num_envs=4)
    wrapped = gym.wrappers.vector.NormalizeObservation(venv)
    wrapped.reset(seed=2)
    bankrolls = [venv.tables.bankroll.copy()]
    for a in np.random.default_rng(2).integers(0, 36, (40, 4)):
        obs, *_ = wrapped.step(a)
        bankrolls.append(venv.tables.bankroll.copy())
    assert obs.shape == (4, 47) and np.isfinite(obs).all()
    # the bankroll feature (bankroll / starting bankroll) averaged over every table and step
    start = venv.config.bankroll_units
    assert wrapped.obs_rms.mean[0] == pytest.approx(np.mean(bankrolls) / start, rel=1e-3)


def test_flatten_and_other_observation_wrappers():
    flat = gym.make(ENV_ID)
    as_dict = gym.wrappers.FlattenObservation(gym.make(ENV_ID, observation="dict"))
    assert as_dict.observation_space == flat.observation_space
    a, _ = flat.reset(seed=3)
    b, _ = as_dict.reset(seed=3)
    for action in (1, 2, 0, 5):
        np.testing.assert_array_equal(a, b)
        a, b = flat.step(action)[0], as_dict.step(action)[0]
    stacked = gym.wrappers.FrameStackObservation(gym.make(ENV_ID), stack_size=4)
    obs, _ = stacked.reset(seed=0)
    assert obs.shape == (4, 47) and stacked.observation_space.contains(obs)
    clipped = gym.wrappers.TransformObservation(
        gym.make(ENV_ID), lambda o: np.minimum(o, 1.0), gym.spaces.Box(0.0, 1.0, (47,), np.float32)
    )
    obs, _ = clipped.reset(seed=0)
    assert clipped.observation_space.contains(obs) and obs[0] == 1.0
    as_double = gym.wrappers.DtypeObservation(gym.make(ENV_ID), np.float64)
    assert as_double.reset(seed=0)[0].dtype == np.float64
    # the raw units stay available, and the vector wrappers take the Dict too
    venv = gym.wrappers.vector.FlattenObservation(
        gym.make_vec(ENV_ID, num_envs=3, observation="dict", obs_scale="raw")
    )
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (3, 47) and obs[0, 0] == 100.0  # 100 units, raw


# ---------------------------------------------------------------------------------- video
def test_record_video(tmp_path):
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make(ENV_ID, render_mode="rgb_array", max_episode_steps=8),
        str(tmp_path),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    env.reset(seed=0)
    for _ in range(8):
        env.step(1)
    env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_human_render_prints_each_hand_once(capsys):
    env = gym.make(ENV_ID, render_mode="human")
    env.reset(seed=0)
    assert "no hand dealt yet" in capsys.readouterr().out
    env.step(1)
    env.render()  # as SB3 / RL Zoo's enjoy call it after step: not printed twice
    out = capsys.readouterr().out
    assert out.count("Player:") == 1 and "Banker:" in out


# ------------------------------------------------------------------------------ stable-baselines3
def test_sb3_algorithms_with_the_defaults(tmp_path):
    """PPO, A2C and DQN with MlpPolicy on gym.make / make_vec_env's defaults (no adapter, no
    arguments), PPO logging to tensorboard."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("tensorboard")
    import torch
    from stable_baselines3 import A2C, DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (see run_python)
    try:
        env = make_vec_env(ENV_ID, n_envs=2, seed=0)
        kwargs = dict(
            n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu", tensorboard_log=str(tmp_path)
        )
        ppo = PPO("MlpPolicy", env, **kwargs)
        ppo.learn(128)
        events = list(tmp_path.glob("PPO_1/events.out.tfevents.*"))
        assert len(events) == 1 and events[0].stat().st_size > 0
        A2C("MlpPolicy", env, seed=0, device="cpu").learn(100)
        dqn = DQN("MlpPolicy", gym.make(ENV_ID), learning_starts=50, buffer_size=1000, seed=0, device="cpu")
        dqn.learn(150)
        assert dqn.num_timesteps >= 150 and ppo.num_timesteps >= 128
    finally:
        torch.set_num_threads(threads)


def test_sb3_subproc_vec_env_with_every_start_method(tmp_path):
    """SubprocVecEnv workers started by fork, forkserver and spawn, from a user's script (spawn and
    forkserver children re-import it, and with it pb_gym's registration)."""
    pytest.importorskip("stable_baselines3")
    out = run_script(
        """
        import json
        import numpy as np
        import pb_gym  # registers pb_gym/PuntoBanco-v0

        if __name__ == "__main__":
            from stable_baselines3.common.env_util import make_vec_env
            from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

            results = {}
            for method in ("fork", "forkserver", "spawn", None):
                cls = DummyVecEnv if method is None else SubprocVecEnv
                kwargs = {} if method is None else {"start_method": method}
                env = make_vec_env("pb_gym/PuntoBanco-v0", n_envs=2, seed=5, vec_env_cls=cls,
                                   vec_env_kwargs=kwargs)
                obs = env.reset()
                rewards, ends = [], []
                for step in range(1, 101):
                    obs, reward, done, infos = env.step(np.array([step % 36, 0]))
                    rewards.append(reward.tolist())
                    ends += [(step, int(i), bool(infos[i]["TimeLimit.truncated"]))
                             for i in np.flatnonzero(done)]
                env.close()
                results[str(method)] = {"shape": list(obs.shape), "rewards": rewards, "ends": ends}
            print(json.dumps(results))
    """,
        tmp_path,
    )
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(results) == {"fork", "forkserver", "spawn", "None"}
    for method, r in results.items():
        assert r["shape"] == [2, 47], method
        assert [100, 1, True] in r["ends"], method  # the never-betting table: TimeLimit at 100 hands
        # the same hands in every process (DummyVecEnv keeps rewards in float32)
        np.testing.assert_allclose(r["rewards"], results["None"]["rewards"], rtol=1e-6, err_msg=method)


PYTHON_C_WORKERS = """
import json
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv
env = make_vec_env(ENV, n_envs=2, seed=3, vec_env_cls=SubprocVecEnv, vec_env_kwargs=KWARGS)
obs = env.reset()
banker = env.env_method("action_index", "banker", 0)[0]
rewards = [env.step(np.array([banker, 0]))[1].tolist() for _ in range(5)]
limit, kind = env.get_attr("spec")[0].max_episode_steps, type(env.get_attr("unwrapped")[0]).__name__
print(json.dumps({"shape": list(obs.shape), "rewards": rewards, "limit": limit, "env": kind}))
env.close()
"""


@pytest.mark.parametrize("start_method", [None, "spawn"])
def test_workers_started_from_python_c_need_the_module_prefix(tmp_path, start_method):
    """From ``python -c`` or a notebook, SubprocVecEnv workers started by SubprocVecEnv's default
    (forkserver) or by ``spawn`` have no script to re-import, as docs/rl-libraries.md says: the id
    written ``"pb_gym:pb_gym/PuntoBanco-v0"`` makes Gymnasium import pb_gym in each worker (two tables,
    five hands, the rewards the table pays, the registered hand limit), the plain id dies in the worker
    with ``NamespaceNotFound``. Gymnasium 1.x loads no plugin entry points, so nothing else imports
    pb_gym there."""
    pytest.importorskip("stable_baselines3")
    kwargs = {} if start_method is None else {"start_method": start_method}

    def workers(env_id: str):
        code = PYTHON_C_WORKERS.replace("ENV", repr(env_id)).replace("KWARGS", repr(kwargs))
        return run_python("-c", code, cwd=tmp_path)

    out = workers("pb_gym:pb_gym/PuntoBanco-v0")
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["shape"], result["limit"], result["env"]) == ([2, 47], 100, "PuntoBancoEnv")
    paid = np.round(np.array(result["rewards"]), 6)  # table 0 bets one unit on the banker each hand
    assert paid.shape == (5, 2) and not paid[:, 1].any()
    assert np.isin(paid[:, 0], [-1.0, 0.0, 0.95]).all() and paid[:, 0].any()
    if start_method == "spawn":
        plain = workers("pb_gym/PuntoBanco-v0")
        assert plain.returncode != 0
        assert "NamespaceNotFound" in plain.stderr and "Namespace pb_gym not found" in plain.stderr


def test_gymnasium_loads_no_plugin_entry_points():
    """Why the ``pb_gym:`` prefix and not an entry point: Gymnasium 1.x (pb-gym needs >= 1.0) has no
    plugin loader; its registration reads no ``gymnasium.envs`` entry points (0.26-0.29 did)."""
    import inspect

    from gymnasium.envs import registration

    source = inspect.getsource(registration)
    assert not hasattr(registration, "load_plugin_envs") and "entry_points(" not in source
    assert "importlib.import_module(module)" in source  # the module prefix of an id is imported


# ----------------------------------------------------------------------------------- RL Zoo
ALGOS = ("ppo", "a2c", "dqn")
ZOO_DRIVER = """
    import runpy, sys

    def run(script, *args):
        sys.argv = [script, *args]
        runpy.run_module(f"rl_zoo3.{script}", run_name="__main__", alter_sys=True)

    if __name__ == "__main__":
        common = ["--env", "pb_gym/PuntoBanco-v0", "--seed", "0", "-f", "logs"]
        {calls}
"""


def _zoo(tmp_path: Path, calls: list[str]):
    pytest.importorskip("rl_zoo3")
    code = ZOO_DRIVER.replace("{calls}", "\n        ".join(calls))
    return run_script(code, tmp_path, timeout=600)


def _trained(tmp_path: Path, algo: str) -> Path:
    runs = sorted((tmp_path / "logs" / algo).glob("pb_gym-PuntoBanco-v0_*"))
    assert runs, f"no {algo} run folder"
    model = runs[-1] / "pb_gym-PuntoBanco-v0.zip"
    assert model.is_file(), model
    return runs[-1]


def test_rl_zoo_train_with_its_default_hyperparameters(tmp_path):
    """``python -m rl_zoo3.train --algo ppo|a2c|dqn --env pb_gym/PuntoBanco-v0 --gym-packages pb_gym``
    with RL Zoo's default hyperparameters (MlpPolicy), then ``enjoy`` with its defaults (human
    rendering) and ``record_video`` through ``python -m pb_gym.agents.rlzoo``."""
    train = 'run("train", "--algo", "{}", "--gym-packages", "pb_gym", "-n", "64", *common)'
    enjoy = 'run("enjoy", "--algo", "dqn", "--gym-packages", "pb_gym", "-n", "12", *common)'
    out = _zoo(tmp_path, [*map(train.format, ALGOS), 'print("ENJOY")', enjoy])
    for algo in ALGOS:
        run = _trained(tmp_path, algo)
        config = (run / "pb_gym-PuntoBanco-v0" / "config.yml").read_text()
        assert "MlpPolicy" in config
    enjoyed = out.stdout.split("ENJOY", 1)[1]
    assert enjoyed.count("Player:") >= 12  # the hands, printed by the human render mode
    video = run_python(
        "-m",
        "pb_gym.agents.rlzoo",
        "record_video",
        *f"--algo ppo --env {ENV_ID} -f logs -n 10".split(),
        cwd=tmp_path,
    )
    assert video.returncode == 0, video.stderr[-3000:]
    videos = list((_trained(tmp_path, "ppo") / "videos").glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_rl_zoo_train_with_the_shipped_hyperparameters(tmp_path):
    """``rl_zoo3.train --conf-file configs/rlzoo/ALGO.yml`` uses the shipped hyperparameters of the env,
    and finds those of a benchmark task and trains on it: ``--env pb_gym/Discover-v0`` (at a small
    size: 4 tables, 256 hands)."""
    calls = [
        f'run("train", "--algo", "{algo}", "--gym-packages", "pb_gym", "--conf-file", '
        f'r"{ROOT / "configs" / "rlzoo" / f"{algo}.yml"}", "-n", "{n}", *common)'
        for algo, n in (("ppo", 4096), ("a2c", 512), ("dqn", 1200))
    ]
    discover = (
        f'run("train", "--algo", "ppo", "--env", "pb_gym/Discover-v0", "--gym-packages", "pb_gym", '
        f'"--conf-file", r"{ROOT / "configs" / "rlzoo" / "ppo.yml"}", "-n", "256", "--seed", "0", "-f", '
        '"logs", "--hyperparams", "n_envs:4", "n_steps:32", "batch_size:64")'
    )
    _zoo(tmp_path, [*calls, discover])
    import yaml

    for algo in ALGOS:
        shipped = yaml.safe_load((ROOT / "configs" / "rlzoo" / f"{algo}.yml").read_text())[ENV_ID]
        used = (_trained(tmp_path, algo) / "pb_gym-PuntoBanco-v0" / "config.yml").read_text()
        used = dict(yaml.load(used, Loader=yaml.UnsafeLoader))
        for key, value in shipped.items():
            if key != "n_timesteps":
                assert used[key] == value, (algo, key)
    runs = sorted((tmp_path / "logs" / "ppo").glob("pb_gym-Discover-v0_*"))
    assert runs and (runs[-1] / "pb_gym-Discover-v0.zip").is_file()


def test_rlzoo_runner_names_its_scripts():
    from pb_gym.agents import rlzoo

    with pytest.raises(SystemExit, match="SCRIPT='plot' is not allowed; allowed: train, enjoy"):
        rlzoo.main(["plot"])


def test_saved_models_from_before_the_new_defaults_keep_their_interface():
    from pb_gym.agents import learned
    from pb_gym.envs import config as env_config

    old = learned.env_kwargs_from_json({"decks": 8, "max_hands": 100})  # an env.json written before
    assert (old["observation"], old["obs_scale"], old["action_mode"]) == ("dict", "raw", "multidiscrete")
    assert learned.env_kwargs_from_json({"flatten_obs": True})["observation"] == "flat"
    assert env_config.make_config(**old).observation == "dict"


@pytest.mark.parametrize("algo", ALGOS)
def test_rl_zoo_finds_hyperparameters_for_every_benchmark_task(algo, tmp_path):
    """configs/rlzoo/{ppo,a2c,dqn}.yml hold an entry for every registered benchmark task (without one,
    RL Zoo stops with ``Hyperparameters not found for ppo-pb_gym/Discover-v0``), and RL Zoo's own
    reader and preprocessing take each: the settings of configs/train/discover*.yaml."""
    pytest.importorskip("rl_zoo3")
    import argparse
    import contextlib
    import io

    import yaml
    from rl_zoo3.exp_manager import ExperimentManager

    from pb_gym.envs.tasks import TASKS

    path = ROOT / "configs" / "rlzoo" / f"{algo}.yml"
    shipped = yaml.safe_load(path.read_text())
    missing = sorted(set(TASKS) - set(shipped))
    assert not missing, f"add RL Zoo hyperparameters for {missing} to configs/rlzoo/{algo}.yml"
    first_rate = {"ppo": 0.001, "a2c": 0.001, "dqn": 0.0005}[algo]
    for task in TASKS:
        manager = ExperimentManager(argparse.Namespace(), algo, task, str(tmp_path), config=str(path))
        with contextlib.redirect_stdout(io.StringIO()):  # RL Zoo prints what it reads
            hyperparams, _ = manager.read_hyperparameters()
            kwargs, _, _, _ = manager._preprocess_hyperparams(hyperparams)
        assert manager.n_envs == shipped[task]["n_envs"] >= 128, task
        assert manager.normalize and manager.normalize_kwargs["norm_obs"], task
        assert not manager.normalize_kwargs["norm_reward"], task
        assert kwargs["gamma"] == 0.0 and kwargs["policy"] == "MlpPolicy", task
        rate = kwargs["learning_rate"]  # linear to 0 over training (progress remaining 1 -> 0)
        expected = 0.003 if task.endswith("EdgeSort-v0") and algo == "ppo" else first_rate
        assert rate(1.0) == pytest.approx(expected) and rate(0.0) == 0.0, task
        width = kwargs["policy_kwargs"]["net_arch"][0]
        assert width == (256 if task.endswith("DiscoverAll-v0") and algo != "dqn" else 64), task
