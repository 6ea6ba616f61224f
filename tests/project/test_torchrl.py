"""TorchRL's Gymnasium wrapper over the env: it builds (TorchRL passes keywords of its own and falls
back on TypeError), its specs check, and a rollout's rewards are the env's own."""

from __future__ import annotations

import numpy as np
import pytest

torchrl = pytest.importorskip("torchrl")
torch = pytest.importorskip("torch")

import gymnasium as gym  # noqa: E402
from torchrl.envs import GymEnv  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import pb_gym  # noqa: E402,F401  (registers the env)

from repo_paths import run_python  # noqa: E402

ENV_ID = "pb_gym/PuntoBanco-v0"


def test_gym_env_builds_and_its_specs_check():
    torch.set_num_threads(1)
    env = GymEnv(ENV_ID)
    check_env_specs(env, seed=0)
    assert env.action_spec.space.n == gym.make(ENV_ID).action_space.n


def test_a_rollout_pays_what_the_env_pays():
    # abstaining every hand: no stake, so every reward is exactly 0 and the bankroll never moves
    env = GymEnv(ENV_ID)
    env.set_seed(0)
    n = env.action_spec.space.n
    abstain = torch.nn.functional.one_hot(torch.tensor(0), n) if env.action_spec.shape[-1:] == (n,) else 0

    def policy(td):
        td["action"] = abstain if isinstance(abstain, torch.Tensor) else torch.tensor(abstain)
        return td

    rollout = env.rollout(50, policy)
    assert rollout.batch_size[0] == 50
    assert np.all(rollout["next", "reward"].numpy() == 0.0)
    # betting every hand on the banker at the first stake level: rewards are the table's own outcomes
    bet = pb_gym.PuntoBancoEnv().action_index("banker", 0)
    one = torch.nn.functional.one_hot(torch.tensor(bet), n) if env.action_spec.shape[-1:] == (n,) else bet

    def banker(td):
        td["action"] = one if isinstance(one, torch.Tensor) else torch.tensor(one)
        return td

    rewards = env.rollout(100, banker, break_when_any_done=False)["next", "reward"].numpy().ravel()
    # a banker win pays 19:20 (TorchRL keeps the env's float32 reward), a loss -1, a tie pushes; in
    # 100 hands both a win and a loss occur (the chance that either is missing is below 1e-20)
    payouts = np.array([-1.0, 0.0, 0.95], dtype=np.float32)
    assert np.isin(rewards, payouts).all()
    assert (rewards == payouts[0]).any() and (rewards == payouts[2]).any()


def test_gym_wrapper_over_make_vec_needs_same_step_or_disabled_autoreset():
    """docs/rl-libraries.md: TorchRL refuses the native vector env's default NEXT_STEP autoreset and
    takes it built with ``autoreset_mode="SameStep"`` (or ``"Disabled"``) as a plain keyword."""
    from torchrl.envs import GymWrapper

    torch.set_num_threads(1)
    with pytest.raises(RuntimeError, match="auto-reset mode must be one of SAME_STEP or DISABLED"):
        GymWrapper(gym.make_vec(ENV_ID, num_envs=2))
    env = GymWrapper(gym.make_vec(ENV_ID, num_envs=3, autoreset_mode="SameStep"))
    env.set_seed(0)
    abstain = torch.zeros(env.action_spec.shape, dtype=env.action_spec.dtype)
    if abstain.dim() == 2:  # one-hot actions: action 0 (no bet) at each table
        abstain[:, 0] = 1

    def policy(td):
        td["action"] = abstain.clone()
        return td

    rollout = env.rollout(150, policy, break_when_any_done=False)
    assert tuple(rollout.batch_size) == (3, 150)
    assert not rollout["next", "reward"].any()
    done = rollout["next", "done"].squeeze(-1).numpy()
    # never betting, no table is ruined: each one's 100-hand episode ends once in 150 hands
    assert done[:, 99].all() and done.sum() == 3


def test_gym_env_with_workers_from_python_c_takes_the_module_prefix(tmp_path):
    """``GymEnv(id, num_envs=N)`` starts an AsyncVectorEnv whose workers start by ``spawn`` (importing
    torchrl makes it the start method): from ``python -c`` the ``pb_gym:`` id works there."""
    code = (
        "import multiprocessing, torch\n"
        "from torchrl.envs import GymEnv\n"
        "env = GymEnv('pb_gym:pb_gym/PuntoBanco-v0', num_envs=2)\n"
        "rollout = env.rollout(5, break_when_any_done=False)\n"
        "print(multiprocessing.get_start_method(), tuple(rollout.batch_size))\n"
        "env.close()\n"
    )
    out = run_python("-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-3:] == ["spawn", "(2,", "5)"]
