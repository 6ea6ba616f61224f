"""The learning curve of ``pb-gym train`` (a callback recording mean reward per hand and the share of
hands with a bet requested; CSV and PNG) and the profit per hand dealt of the held-out evaluation."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.envs import config
from pb_gym.experiments.common import plotting, stats


# ------------------------------------------------------------------------------- learning curve
def next_mark(mark: int, timesteps: int, every: int) -> int:
    """The first of ``mark``, ``mark + every``, ... past ``timesteps``: a callback's next row after
    the one it just wrote (one step of n envs may pass several marks; it writes one row for them)."""
    while mark <= timesteps:
        mark += every
    return mark


CURVE_STATE = (
    "rows",
    "reward_sum",
    "hands",
    "bets",
    "episodes",
    "episode_return",
    "episode_hands",
    "next_at",
)
"""What the learning curve's callback carries from one rollout to the next (kept in checkpoints)."""


def make_curve_callback(every: int, cfg: config.EnvConfig):
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecNormalize

    class LearningCurve(BaseCallback):
        """Mean reward per hand (raw units) and share of hands with a bet requested, per window."""

        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict[str, float]] = []
            self.resumed = False
            self._reset_window()

        def _reset_window(self) -> None:
            self.reward_sum = 0.0
            self.hands = 0
            self.bets = 0
            self.episodes = 0
            self.episode_return = 0.0
            self.episode_hands = 0

        def _on_training_start(self) -> None:
            if not self.resumed:  # (continuing from a checkpoint: pb_gym.experiments.train.checkpoint)
                self.next_at = every
            env = self.training_env
            self.normalizer = env if isinstance(env, VecNormalize) else None

        def checkpoint_state(self) -> dict:
            return {key: getattr(self, key) for key in CURVE_STATE}

        def resume_from(self, state: dict) -> None:
            self.__dict__.update(state)
            self.resumed = True

        def _on_step(self) -> bool:
            rewards = (
                self.normalizer.get_original_reward()
                if self.normalizer is not None
                else self.locals["rewards"]
            )
            rewards = np.asarray(rewards, dtype=np.float64)
            self.reward_sum += float(rewards.sum())
            self.hands += rewards.size
            actions = np.asarray(self.locals.get("actions")).reshape(rewards.size, -1)
            if cfg.allow_no_bet:
                self.bets += int((actions[:, 0] != 0).sum())
            else:
                self.bets += rewards.size
            for info in self.locals.get("infos", []):
                episode = info.get("episode")
                if episode is not None:
                    self.episodes += 1
                    self.episode_return += float(episode["r"])
                    self.episode_hands += int(episode["l"])
            if self.num_timesteps >= self.next_at:
                self._flush()
                self.next_at = next_mark(self.next_at, self.num_timesteps, every)
            return True

        def _flush(self) -> None:
            if self.hands == 0:
                return
            self.rows.append(
                {
                    "timesteps": self.num_timesteps,
                    "reward_per_hand": self.reward_sum / self.hands,
                    "bet_rate": self.bets / self.hands,
                    "episodes": self.episodes,
                    "episode_return": self.episode_return / self.episodes if self.episodes else math.nan,
                    "episode_hands": self.episode_hands / self.episodes if self.episodes else math.nan,
                }
            )
            self._reset_window()

        def _on_training_end(self) -> None:
            self._flush()

    return LearningCurve()


def write_curve(rows: list[dict], out: Path, title: str, cfg: config.EnvConfig) -> list[Path]:
    """``learning_curve.csv`` and ``learning_curve.png`` (with the flat-banker and abstain levels)."""
    csv_path, png_path = out / "learning_curve.csv", out / "learning_curve.png"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(
            handle,
            fieldnames=[
                "timesteps",
                "reward_per_hand",
                "bet_rate",
                "episodes",
                "episode_return",
                "episode_hands",
            ],
        )
        writer.writeheader()
        writer.writerows(rows)
    plt = plotting.pyplot()
    banker = float(exact.expected_values(R.full_shoe(cfg.rules.decks), cfg.rules)[R.BETS.index("banker")])
    x = [r["timesteps"] for r in rows]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax.plot(x, [r["reward_per_hand"] for r in rows], label="learned (training rollouts)")
    ax.axhline(0.0, color="k", lw=0.6, ls=":", label="never bet")
    ax.axhline(
        banker * cfg.min_units,
        color="C3",
        lw=0.8,
        ls="--",
        label=f"flat banker at the minimum ({banker * cfg.min_units:+.4f})",
    )
    ax.set_ylabel("mean reward per hand (units)")
    ax.legend(fontsize=7)
    ax.set_title(title)
    ax2.plot(x, [r["bet_rate"] for r in rows], color="C2")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_ylabel("share of hands bet")
    ax2.set_xlabel("timesteps (hands, all tables)")
    plotting.save(fig, png_path)
    return [csv_path, png_path]


def profit_per_hand(report: dict) -> list[dict]:
    """Profit per hand dealt (money) of every system with a 95% CI over sessions, and the paired
    difference from the first system (the learned policy; same hands, so the CI is paired). Sessions
    may differ in length (``one_shoe``: each ends with its shoe), so the figure is the ratio of sums,
    total profit over total hands dealt, with its ratio-estimator interval over sessions
    (:func:`pb_gym.experiments.common.stats.ratio_ci`). Also the bankroll's log growth per hand dealt (what
    Kelly
    maximizes; a final bankroll below half the table minimum counts as that, as the env's
    ``reward="log_growth"`` does)."""
    start = report["bankroll"]
    finals = report["final_bankrolls"]
    hands = np.asarray(report["session_hands"], dtype=np.float64)  # dealt in each session
    dealt = float(hands.sum())
    floor = config.LOG_GROWTH_FLOOR * report["table"]["minimum"]  # a ruined session, as the env counts it
    names = [s["name"] for s in report["systems"]]
    first = np.asarray(finals[names[0]]) - start
    rows = []
    for s in report["systems"]:
        final = np.asarray(finals[s["name"]])
        net = final - start
        profit = stats.ratio_ci(net, hands)
        diff = stats.ratio_ci(first - net, hands)
        growth = stats.ratio_ci(np.log(np.maximum(final, floor) / start), hands)
        rows.append(
            {
                "name": s["name"],
                "profit_per_hand": profit["estimate"],
                "ci95": profit["ci95"],
                "wagered_per_hand": s["wagered"] / dealt,
                "bet_share": s["hands"] / dealt,
                "learned_minus_this": diff["estimate"],
                "learned_minus_this_ci95": diff["ci95"],
                "log_growth_per_hand": growth["estimate"],
                "log_growth_ci95": growth["ci95"],
            }
        )
    return rows


def print_profit(rows: list[dict], unit: float) -> None:
    print(
        f"\nprofit per hand dealt (money; unit {unit:g}), 95% CI over sessions; last column: the "
        f"learned policy minus this system (paired)"
    )
    print(
        f"{'system':<22} {'share bet':>9} {'wagered/hand':>12} {'profit/hand':>12} {'95% CI':>22} "
        f"{'learned - this':>15} {'95% CI':>22} {'log growth/hand':>16}"
    )
    for r in rows:
        lo, hi = r["ci95"]
        dlo, dhi = r["learned_minus_this_ci95"]
        print(
            f"{r['name'][:22]:<22} {r['bet_share']:>9.2%} {r['wagered_per_hand']:>12.4f} "
            f"{r['profit_per_hand']:>+12.5f} {f'[{lo:+.5f}, {hi:+.5f}]':>22} "
            f"{r['learned_minus_this']:>+15.5f} {f'[{dlo:+.5f}, {dhi:+.5f}]':>22} "
            f"{r['log_growth_per_hand']:>+16.3e}"
        )
