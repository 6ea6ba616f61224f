"""The discovery scoring of ``pb-gym train`` (a config's ``discovery:`` section): the policy in training
scored exactly against the known optimum.

The scoring itself is :mod:`pb_gym.experiments.benchmark.discovery`'s: the perfect-information
bettor, the best linear count and the policy on the same held-out hands, each hand's exact EV. Here,
the trained model is wrapped as its policy (:func:`make_policy`), scored every
``timesteps / discovery.curve_points`` timesteps while it trains (the exact learning curve,
:func:`make_exact_curve_callback`), and scored once trained, its files written
(:func:`run_discovery`).
"""

from __future__ import annotations

import time
from pathlib import Path

from pb_gym import strict_json
from pb_gym.experiments.benchmark.discovery import DiscoveryConfig
from pb_gym.experiments.train.curve import next_mark
from pb_gym.experiments.train.settings import TrainConfig, study_bets


def make_policy(config: TrainConfig, model, normalizer):
    """The model being trained (or trained) as an :class:`pb_gym.experiments.benchmark.discovery.Policy`."""
    from pb_gym.experiments.benchmark import discovery

    return discovery.Policy(model, config.algorithm, config.env.config(), config.obs_transform, normalizer)


def _discovery(config: TrainConfig) -> DiscoveryConfig:
    """The ``discovery:`` section of a config whose discovery step runs."""
    if config.discovery is None:
        raise ValueError("the discovery step needs the config's discovery: section")
    return config.discovery


def make_exact_curve_callback(config: TrainConfig, normalizer):
    """Every ``timesteps / discovery.curve_points`` timesteps, score the current greedy policy on the
    same held-out hands (``discovery.curve_*``): exact conditional profit per hand dealt."""
    from stable_baselines3.common.callbacks import BaseCallback

    from pb_gym.experiments.benchmark import discovery

    spec = _discovery(config)
    every = max(1, config.total_timesteps // spec.curve_points)

    class ExactCurve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict] = []
            self.seconds = 0.0
            self.next_at = every
            self.resumed = False
            self.normalizer = normalizer  # (the training env's VecNormalize, set once it exists)
            # training seconds (wall time, this curve's scoring left out) before this process's part,
            # and the same in CPU seconds (every thread of the process)
            self.trained_before, self.since, self.scored_here = 0.0, time.perf_counter(), 0.0
            self.cpu_before, self.cpu_since, self.cpu_scored_here = 0.0, time.process_time(), 0.0

        def trained(self) -> float:
            return self.trained_before + time.perf_counter() - self.since - self.scored_here

        def trained_cpu(self) -> float:
            return self.cpu_before + time.process_time() - self.cpu_since - self.cpu_scored_here

        def checkpoint_state(self) -> dict:
            return {
                "rows": self.rows,
                "seconds": self.seconds,
                "next_at": self.next_at,
                "trained_before": self.trained(),
                "cpu_before": self.trained_cpu(),
            }

        def resume_from(self, state: dict) -> None:
            self.__dict__.update(state)
            self.resumed = True

        def _score(self) -> None:
            started, cpu_started = time.perf_counter(), time.process_time()
            trained, trained_cpu = self.trained(), self.trained_cpu()
            result = discovery.score(
                make_policy(config, self.model, self.normalizer),
                config.env.kwargs(),
                spec.bets,
                spec.curve_tables,
                spec.curve_hands,
                spec.curve_seed,
            )
            self.rows.append(discovery.curve_row(self.num_timesteps, result, trained, trained_cpu))
            self.seconds += time.perf_counter() - started
            self.scored_here += time.perf_counter() - started
            self.cpu_scored_here += time.process_time() - cpu_started

        def _on_training_start(self) -> None:
            self.since, self.scored_here = time.perf_counter(), 0.0
            self.cpu_since, self.cpu_scored_here = time.process_time(), 0.0
            if not self.resumed:
                self._score()  # the initial policy

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_at:
                self._score()
                self.next_at = next_mark(self.next_at, self.num_timesteps, every)
            return True

        def _on_training_end(self) -> None:
            if not self.rows or self.rows[-1]["timesteps"] != self.num_timesteps:
                self._score()

    return ExactCurve()


def run_discovery(
    config: TrainConfig,
    model,
    normalizer,
    folder: Path,
    curve_rows: list[dict],
    training_seconds: float | None = None,
) -> tuple[dict, list[Path]]:
    """Score the trained policy against the perfect-information bettor and the best linear count on
    the held-out ``discovery`` deal; write ``folder`` (JSON, text, calibration and exact learning
    curve plots)."""
    from pb_gym.experiments.benchmark import discovery

    spec = _discovery(config)
    started = time.perf_counter()
    cfg = config.env.config()
    count = discovery.linear_count(
        cfg.rules, spec.bets, spec.count_training_shoes, spec.count_training_seed, study_bets(cfg)[1]
    )
    result = discovery.score(
        make_policy(config, model, normalizer),
        config.env.kwargs(),
        spec.bets,
        spec.tables,
        spec.hands,
        spec.seed,
        count=count,
    )
    result["seconds"] = time.perf_counter() - started
    result["training_seconds"] = training_seconds  # wall time of the training, its curve scoring left out
    result["curve"] = curve_rows
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{config.name}: {config.algorithm}, reward {config.env.reward}"
    files = [folder / "discovery.json", folder / "discovery.txt"]
    files[0].write_text(strict_json.dumps(result, indent=2))
    files[1].write_text(discovery.report(result) + "\n")
    files.append(discovery.plot_calibration(result, folder / "calibration.png", title))
    if curve_rows:
        files += discovery.write_curve(curve_rows, folder, title)
    return result, files


__all__ = ["make_policy", "make_exact_curve_callback", "run_discovery"]
