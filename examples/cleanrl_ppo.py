"""PPO written out in one file, CleanRL style, on a pb-gym benchmark task, scored by pb_gym.benchmark.

Proof that the benchmark is library-agnostic: no stable-baselines3, no pb-gym trainer. The agent steps
the native vector env (``gymnasium.make_vec("pb_gym/Discover-v0", num_envs=N)``: N tables, one engine
call per step), learns from the task's own reward (the exact EV of the stake for the unseen cards) and
is then scored on the benchmark's held-out hands against the perfect-information bettor::

    python examples/cleanrl_ppo.py                       # about 1.5M steps
    python examples/cleanrl_ppo.py --total-timesteps 200000 --score-tables 64 --score-hands 400

Each hand is its own bet (a stake does not change the next hand's odds), so ``gamma = 0``: the
advantage is the reward minus the value of the observation. The observation is normalized by running
statistics (frozen for scoring); the last layer starts biased towards "no bet" (``init_abstain``) so
the early policy does not lose its way on hundreds of losing bets per edge found.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import pb_gym  # noqa: F401  (registers the tasks)
from pb_gym import benchmark


@dataclasses.dataclass
class Args:
    task: str = "pb_gym/Discover-v0"
    """the benchmark task"""
    seed: int = 0
    """seed of the training deal and of torch"""
    num_envs: int = 256
    """tables stepped together"""
    num_steps: int = 16
    """steps per table per rollout"""
    total_timesteps: int = 1_500_000
    """hands played in training, all tables"""
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    """linear decay of the learning rate to 0"""
    gamma: float = 0.0
    gae_lambda: float = 0.0
    num_minibatches: int = 4
    update_epochs: int = 2
    clip_coef: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    """units of each of the two hidden layers"""
    init_abstain: float = 2.0
    """initial logit bias of action 0 (no bet)"""
    threads: int = 1
    """torch threads"""
    score_tables: int = benchmark.DEFAULT_TABLES
    score_hands: int = benchmark.DEFAULT_HANDS
    score_seed: int = benchmark.DEFAULT_SEED


class Features:
    """The task's observation plus the composition of the unseen cards: each rank's share of them minus
    its share of a full shoe, in percent (a counter's view: the raw counts shrink as the shoe is dealt,
    these do not). Read from the observation's ``shoe`` field, where the task shows it."""

    def __init__(self, task: str) -> None:
        from pb_gym.envs import config

        cfg = config.make_config(**benchmark.get_task(task).kwargs)
        self.shoe = cfg.obs_offsets.get("shoe")
        self.size = cfg.obs_size + (0 if self.shoe is None else self.shoe[1] - self.shoe[0])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.shoe is None:
            return obs
        # (a full shoe holds as many cards of each of the 13 ranks: each share is 1/13)
        counts = obs[:, self.shoe[0] : self.shoe[1]].astype(np.float64)
        share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1e-9)
        return np.concatenate([obs, 100.0 * (share - 1.0 / 13.0)], axis=1).astype(np.float32)


class RunningNorm:
    """Running mean and variance of the observations (Welford over batches)."""

    def __init__(self, size: int) -> None:
        self.mean, self.var, self.count = np.zeros(size), np.ones(size), 1e-4

    def update(self, x: np.ndarray) -> None:
        mean, var, n = x.mean(axis=0), x.var(axis=0), len(x)
        delta, total = mean - self.mean, self.count + n
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def __call__(self, x: np.ndarray) -> torch.Tensor:
        z = np.clip((x - self.mean) / np.sqrt(self.var + 1e-8), -10, 10)
        return torch.as_tensor(z, dtype=torch.float32)


def layer(n_in: int, n_out: int, std: float = np.sqrt(2)) -> nn.Linear:
    out = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(out.weight, std)
    nn.init.constant_(out.bias, 0.0)
    return out


class Agent(nn.Module):
    def __init__(self, obs_size: int, n_actions: int, hidden: int, init_abstain: float) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer(obs_size, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, 1, std=1.0)
        )
        self.actor = nn.Sequential(
            layer(obs_size, hidden),
            nn.Tanh(),
            layer(hidden, hidden),
            nn.Tanh(),
            layer(hidden, n_actions, std=0.01),
        )
        with torch.no_grad():
            self.actor[-1].bias[0] = init_abstain

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def train(args: Args) -> tuple[Agent, Features, RunningNorm, dict]:
    """PPO on ``args.task``; the agent, its features, their frozen statistics and the timings."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    # SAME_STEP: a table whose shoe ended starts the next in the same step, so every step is a hand played
    envs = gym.make_vec(args.task, num_envs=args.num_envs, autoreset_mode="SameStep")
    features = Features(args.task)
    obs_size = features.size
    n_actions = int(envs.single_action_space.n)
    agent = Agent(obs_size, n_actions, args.hidden, args.init_abstain)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    norm = RunningNorm(obs_size)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    iterations = max(1, args.total_timesteps // batch_size)

    obs_buf = np.zeros((args.num_steps, args.num_envs, obs_size), dtype=np.float32)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    started = time.perf_counter()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = features(next_obs)
    next_done = torch.zeros(args.num_envs)
    for iteration in range(1, iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / iterations) * args.learning_rate
        for step in range(args.num_steps):
            norm.update(next_obs)
            obs_buf[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(norm(next_obs))
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs, reward, terminated, truncated, _ = envs.step(action.numpy())
            next_obs = features(next_obs)
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32)

        b_obs = norm(obs_buf.reshape(-1, obs_size))  # this rollout's statistics for every minibatch
        with torch.no_grad():  # GAE (with gamma = 0: the reward minus the value)
            next_value = agent.get_value(norm(next_obs)).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            last = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                not_done = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                following = next_value[0] if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * following * not_done - values[t]
                last = delta + args.gamma * args.gae_lambda * not_done * last
                advantages[t] = last
            returns = advantages + values

        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        for _ in range(args.update_epochs):
            order = torch.randperm(batch_size)
            for start in range(0, batch_size, minibatch_size):
                mb = order[start : start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                clipped = torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * clipped).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
    envs.close()
    return (
        agent,
        features,
        norm,
        {"training_seconds": time.perf_counter() - started, "timesteps": iterations * batch_size},
    )


def greedy_policy(agent: Agent, features: Features, norm: RunningNorm):
    """The trained agent as a benchmark policy: observations (N, obs_dim) -> greedy actions (N,)."""

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return agent.actor(norm(features(obs))).argmax(dim=1).numpy()

    return act


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for field in dataclasses.fields(Args):
        flag = "--" + field.name.replace("_", "-")
        if field.type == "bool":
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=field.default)
        else:
            parser.add_argument(flag, type=type(field.default), default=field.default)
    args = Args(**vars(parser.parse_args(argv)))
    agent, features, norm, timing = train(args)
    result = benchmark.score(
        greedy_policy(agent, features, norm),
        args.task,
        tables=args.score_tables,
        hands=args.score_hands,
        seed=args.score_seed,
    )
    result.update(timing)
    print(f"trained {timing['timesteps']:,} steps in {timing['training_seconds']:.1f} s")
    print(benchmark.report(result))
    return result


if __name__ == "__main__":
    main()
