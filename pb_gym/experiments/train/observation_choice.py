"""Which default observation do learners like? PPO on the default env, per observation form and scale.

``python -m pb_gym.experiments.train.observation_choice [--hands 50000] [--seeds 0,1,2,3,4,5,6,7]
[--forms flat-scaled,dict-raw] [--hyperparameters zoo|sb3]``

For each form (``flat`` / ``dict``) x scale (``scaled`` / ``raw``) and seed: PPO trains on 16 tables of
the default environment (the native vector env through :class:`agents.sb3_vec_env.PuntoBancoSB3VecEnv`)
for ``--hands`` hands, then its greedy policy plays 100 held-out tables x 200 hands (seed 10,000 +
seed). Printed per run (one JSON line): the mean reward per hand (units), the share of hands bet, the
training seconds. Never betting scores 0, which is not the optimum: on about 11% of the env's hands
some bet has a positive exact EV for the unseen cards. The perfect-information bettor earns about
+0.008 units a hand at one unit (:mod:`.default_env_optimum`; docs/rl-libraries.md compares the rows
with it).

``--hyperparameters zoo``: those of ``configs/rlzoo/ppo.yml`` (gamma 0, gae_lambda 0, batch 1024, 4
epochs, entropy 0.01, 64x64 MLP); ``sb3``: SB3's PPO defaults with the same rollout (16 x 256).
The README's table ("Using pb-gym from stable-baselines3 / RL Zoo / Gymnasium") comes from
``--hands 50000 --seeds 0,1,2,3,4,5,6,7 --forms flat-scaled,dict-raw`` (about 4 minutes per form on
2 busy cores).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from pb_gym import strict_json

ZOO = dict(
    n_steps=256,
    batch_size=1024,
    n_epochs=4,
    gamma=0.0,
    gae_lambda=0.0,
    ent_coef=0.01,
    learning_rate=3e-4,
    policy_kwargs=dict(net_arch=[64, 64]),
)
SB3 = dict(n_steps=256, batch_size=256)


def run(observation: str, scale: str, seed: int, hands: int, hyperparameters: dict) -> dict:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    torch.set_num_threads(1)
    kwargs: dict[str, Any] = dict(observation=observation, obs_scale=scale)
    env = VecMonitor(PuntoBancoSB3VecEnv(16, **kwargs))
    env.seed(seed)
    policy = "MlpPolicy" if observation == "flat" else "MultiInputPolicy"
    model = PPO(policy, env, seed=seed, device="cpu", **hyperparameters)
    started = time.perf_counter()
    model.learn(hands)
    seconds = time.perf_counter() - started
    held_out = PuntoBancoSB3VecEnv(100, **kwargs)
    held_out.seed(10_000 + seed)
    obs: Any = held_out.reset()
    total, bets = 0.0, 0
    for _ in range(200):
        actions, _ = model.predict(obs, deterministic=True)
        obs, rewards, _, _ = held_out.step(actions)
        total += float(rewards.sum())
        bets += int((np.asarray(actions) != 0).sum())
    return {
        "observation": observation,
        "obs_scale": scale,
        "seed": seed,
        "reward_per_hand": total / 20_000,
        "bet_share": bets / 20_000,
        "train_s": seconds,
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=50_000, help="training hands per run")
    parser.add_argument("--seeds", default="0,1,2,3,4,5,6,7")
    parser.add_argument(
        "--forms", default="flat-scaled,dict-raw", help="comma-separated FORM-SCALE (flat|dict)-(scaled|raw)"
    )
    parser.add_argument("--hyperparameters", choices=("zoo", "sb3"), default="zoo")
    args = parser.parse_args(argv)
    hyperparameters = ZOO if args.hyperparameters == "zoo" else SB3
    rows = []
    for form in args.forms.split(","):
        observation, scale = form.split("-")
        for seed in (int(s) for s in args.seeds.split(",")):
            rows.append(run(observation, scale, seed, args.hands, hyperparameters))
            print(strict_json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
