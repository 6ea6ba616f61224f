"""Learned agents on a session task, over seeds, each run scored exactly against the optimum.

A session task (``pb_gym/Session-v0``: reach 60 units from 20 within 30 hands, table maximum 5) has an
exact optimum (:mod:`pb_gym.session_optimum`), and a trained policy is a deterministic function of the
observation (bankroll, hands left), so its P(goal) is exact too: :func:`pb_gym.session_benchmark.score`
with ``exact=True`` asks the policy once per state and values the table by backward induction. Every
run's figure is thus free of sampling noise; the spread over seeds is the training's alone.

Each algorithm trains with its RL Zoo hyperparameters for the task (``configs/rlzoo/<algo>.yml``, the one
source; ``python -m rl_zoo3.train --algo ppo --env pb_gym/Session-v0 --gym-packages pb_gym --conf-file
configs/rlzoo/ppo.yml`` trains with the same settings over single envs), once per seed, here over the
native session vector env (:class:`pb_gym.agents.session_sb3.SessionSB3VecEnv`: ``n_envs`` tables
stepped by one engine call, the same MDP) and seeing the observation through the entry's
``env_wrapper``, the thermometer code of :mod:`pb_gym.agents.session_sb3`. ``ppo_mask`` is
sb3-contrib's MaskablePPO, given the legal actions in training and at prediction. The runs are aggregated
as rliable recommends (the interquartile mean of the normalized scores and its 95% stratified bootstrap
interval, the optimality gap), beside each run's figure and wall time::

    python examples/session_agents.py --out out/session-agents            # 3 algorithms x 5 seeds
    python examples/session_agents.py --algos ppo --seeds 0 --timesteps 20000 --out /tmp/smoke

Needs the rl extra (stable-baselines3, sb3-contrib, torch) and the studies extra (PyYAML).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Args:
    task: str = "pb_gym/Session-v0"
    """the session task"""
    algos: tuple[str, ...] = ("ppo", "ppo_mask", "dqn")
    """stable-baselines3's algorithms by RL Zoo's names, and ``ppo_mask``: sb3-contrib's MaskablePPO (which
    RL Zoo's train does not offer), each with its configs/rlzoo/<algo>.yml entry for the task"""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """training seeds (of the envs and of torch)"""
    timesteps: int | None = None
    """training steps of every run (None: the config's n_timesteps)"""
    workers: int = 1
    """runs trained side by side (processes; one torch thread each)"""
    out: Path = Path("out/session-agents")
    """the folder of runs.csv, summary.json and summary.md"""


WRAPPERS = {"pb_gym.agents.session_sb3.SessionThermometer": "thermometer"}
"""The ``env_wrapper`` entries this script knows, as observation codes of ``SessionSB3VecEnv``."""


def hyperparameters(algo: str, task: str) -> dict:
    """The task's entry of ``configs/rlzoo/<algo>.yml``, as keyword arguments of the SB3 algorithm
    (``policy_kwargs`` evaluated and ``lin_<x>`` made a linear schedule from x to 0, as RL Zoo does),
    with ``n_envs``, ``n_timesteps`` and the observation code (``features``) set apart."""
    entry = dict(yaml.safe_load((ROOT / "configs" / "rlzoo" / f"{algo}.yml").read_text())[task])
    if "policy_kwargs" in entry:
        entry["policy_kwargs"] = eval(entry["policy_kwargs"], {"dict": dict})  # (RL Zoo's format)
    for key in ("learning_rate", "clip_range"):
        if isinstance(entry.get(key), str) and entry[key].startswith("lin_"):
            start = float(entry[key][4:])
            entry[key] = lambda progress, start=start: progress * start  # progress: 1 -> 0
    entry["features"] = WRAPPERS[entry.pop("env_wrapper")] if "env_wrapper" in entry else "raw"
    return entry


def train_and_score(algo: str, seed: int, task: str, timesteps: int | None) -> dict:
    """One run: train, then the exact P(goal) of the deterministic policy against the optimum."""
    import sb3_contrib
    import stable_baselines3
    import torch

    import pb_gym  # noqa: F401  (registers the tasks)
    from pb_gym import session_benchmark
    from pb_gym.agents.session_sb3 import SessionSB3VecEnv, featured

    torch.set_num_threads(1)
    settings = hyperparameters(algo, task)
    n_envs, steps = settings.pop("n_envs"), int(timesteps or settings.pop("n_timesteps"))
    settings.pop("n_timesteps", None)
    features = settings.pop("features")
    env = SessionSB3VecEnv(task, n_envs, features=features, seed=seed)
    masked = algo == "ppo_mask"
    cls = sb3_contrib.MaskablePPO if masked else getattr(stable_baselines3, algo.upper())
    model = cls(env=env, seed=seed, verbose=0, **settings)
    started = time.perf_counter()
    model.learn(steps)
    seconds = time.perf_counter() - started
    s = env.settings

    def policy(obs: np.ndarray) -> np.ndarray:
        x = featured(obs, s, features)
        if not masked:
            return model.predict(x, deterministic=True)[0]
        ticks = np.rint(np.asarray(obs)[:, 0].astype(np.float64) * s.goal_ticks).astype(np.int64)
        return model.predict(x, deterministic=True, action_masks=s.masks(ticks))[0]

    result = session_benchmark.score(policy, task, sessions=1000, exact=True)
    exact = result["exact"]
    return {
        "algo": algo,
        "seed": seed,
        "timesteps": steps,
        "p_goal": exact["p_goal"],
        "normalized_score": exact["normalized_score"],
        "illegal_states": exact["illegal_states"],
        "train_seconds": round(seconds, 1),
    }


def summarize(runs: list[dict], task: str) -> dict:
    """Per algorithm: the IQM of the normalized scores with its stratified bootstrap CI, the mean, the
    optimality gap (rliable's: the mean shortfall from 1) with its CI, the median wall time; the
    probability of improvement of every algorithm over every other; and the reference policies."""
    from pb_gym import session_benchmark
    from pb_gym import session_optimum as so
    from pb_gym.experiments.common.stats import (
        iqm,
        optimality_gap,
        probability_of_improvement,
        stratified_bootstrap_ci,
    )

    session = session_benchmark.problem(task)
    optimum = so.solve(session).p_goal
    out: dict = {"task": task, "optimum_p_goal": optimum, "algorithms": {}}
    for algo in dict.fromkeys(run["algo"] for run in runs):
        scores = np.array([run["normalized_score"] for run in runs if run["algo"] == algo])
        out["algorithms"][algo] = {
            "runs": len(scores),
            "iqm": iqm(scores),
            "iqm_ci95": stratified_bootstrap_ci({task: scores}),
            "mean": float(scores.mean()),
            "optimality_gap": optimality_gap(scores),
            "optimality_gap_ci95": stratified_bootstrap_ci({task: scores}, optimality_gap),
            "median_train_seconds": float(np.median([r["train_seconds"] for r in runs if r["algo"] == algo])),
        }
    by_algo = {
        a: np.array([r["normalized_score"] for r in runs if r["algo"] == a]) for a in out["algorithms"]
    }
    out["probability_of_improvement"] = {
        f"{a} > {b}": probability_of_improvement(by_algo[a], by_algo[b])
        for a in by_algo
        for b in by_algo
        if a != b
    }
    out["references"] = {
        "bold play, player": so.evaluate(session, so.bold_play(session, "player")) / optimum,
        "bold play, banker": so.evaluate(session, so.bold_play(session, "banker")) / optimum,
        "flat one unit, player": so.evaluate(session, so.timid_play(session, "player")) / optimum,
    }
    return out


def markdown(summary: dict, runs: list[dict]) -> str:
    lines = [
        f"{summary['task']}: exact optimum P(goal) {summary['optimum_p_goal']:.5f}; normalized score = "
        "P(goal) / the optimum's (exact, by policy evaluation of each trained policy)",
        "",
        "| algorithm | runs | IQM [95% CI] | mean | optimality gap | per seed | train s (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for algo, a in summary["algorithms"].items():
        per_seed = ", ".join(f"{r['normalized_score']:.3f}" for r in runs if r["algo"] == algo)
        low, high = a["iqm_ci95"]
        lines.append(
            f"| {algo} | {a['runs']} | {a['iqm']:.3f} [{low:.3f}, {high:.3f}] | {a['mean']:.3f} | "
            f"{a['optimality_gap']:.3f} | {per_seed} | {a['median_train_seconds']:.0f} |"
        )
    lines += ["", "| reference policy | normalized score |", "|---|---|"]
    lines += [f"| {name} | {value:.3f} |" for name, value in summary["references"].items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=Args.task)
    parser.add_argument("--algos", default=",".join(Args.algos))
    parser.add_argument("--seeds", default=",".join(map(str, Args.seeds)))
    parser.add_argument("--timesteps", type=int, default=None)
    parser.add_argument("--workers", type=int, default=Args.workers)
    parser.add_argument("--out", type=Path, default=Args.out)
    ns = parser.parse_args()
    args = Args(
        ns.task,
        tuple(ns.algos.split(",")),
        tuple(int(s) for s in ns.seeds.split(",")),
        ns.timesteps,
        ns.workers,
        ns.out,
    )
    jobs = [(algo, seed) for algo in args.algos for seed in args.seeds]
    with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
        futures = [pool.submit(train_and_score, a, s, args.task, args.timesteps) for a, s in jobs]
        runs = []
        for future in concurrent.futures.as_completed(futures):
            runs.append(future.result())
            print(json.dumps(runs[-1]), flush=True)
    runs.sort(key=lambda r: (args.algos.index(r["algo"]), r["seed"]))
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "runs.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(runs[0]))
        writer.writeheader()
        writer.writerows(runs)
    summary = summarize(runs, args.task)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (args.out / "summary.md").write_text(markdown(summary, runs))
    print(markdown(summary, runs))


if __name__ == "__main__":
    main()
