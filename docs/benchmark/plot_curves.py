"""The plot docs/benchmark/discover-fast-vs-discover-curve.png (and its CSV) from two `pb-gym train`
runs of seed 0: discover-fast.yaml and discover.yaml, each with its exact learning curve.

    pb-gym train configs/train/discover-fast.yaml --out out/train/discover-fast
    pb-gym train configs/train/discover.yaml --out out/train/discover
    python docs/benchmark/plot_curves.py out/train/discover-fast out/train/discover \\
        docs/benchmark/discover-fast-vs-discover-curve

Each run's `discovery/learning_curve_exact.csv` holds, at every point, the training's wall and CPU
seconds (the curve's own scoring left out) and the share of the perfect bettor's exact profit.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from pb_gym.experiments.common import plotting

RUNS = {
    "discover-fast.yaml": "discover-fast.yaml (512 tables x 8 steps, 2 epochs, lr 0.004)",
    "discover.yaml": "discover.yaml (128 tables x 32 steps, 4 epochs, lr 0.001)",
}
KEYS = ("timesteps", "training_seconds", "training_cpu_seconds", "share_of_perfect", "learned_exact")
KEYS += ("learned_exact_lo", "learned_exact_hi", "perfect_exact", "bet_rate")


def main(fast: str, slow: str, out: str) -> None:
    rows = []
    for name, folder in zip(RUNS, (fast, slow), strict=True):
        with open(Path(folder) / "discovery" / "learning_curve_exact.csv") as handle:
            rows += [{"config": name, **{k: r[k] for k in KEYS}} for r in csv.DictReader(handle)]
    with open(out + ".csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plt = plotting.pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.7), sharey=True)
    styles = {
        "discover-fast.yaml": dict(color="tab:blue", marker="o"),
        "discover.yaml": dict(color="tab:orange", marker="s"),
    }
    for name, label in RUNS.items():
        mine = [r for r in rows if r["config"] == name]
        y = [100 * float(r["share_of_perfect"]) for r in mine]
        for ax, key, scale in zip(
            axes, ("training_seconds", "training_cpu_seconds", "timesteps"), (1, 1, 1e-6), strict=True
        ):
            ax.plot([float(r[key]) * scale for r in mine], y, ms=4, lw=1.5, label=label, **styles[name])
    for ax in axes:
        ax.axhline(95, color="grey", ls="--", lw=1)
        ax.grid(alpha=0.3)
        ax.set_ylim(70, 100)
    for ax in axes[:2]:
        ax.axvline(60, color="grey", ls=":", lw=1)
        ax.set_xlim(0, 65)
    axes[0].text(59, 71, "60 s", ha="right", va="bottom", color="grey", fontsize=9)
    axes[0].text(64, 94.6, "95% of the optimum", ha="right", va="top", color="grey", fontsize=9)
    axes[0].set_xlabel("training wall time (s), curve scoring left out")
    axes[1].set_xlabel("training CPU time (s), all threads, curve scoring left out")
    axes[2].set_xlabel("hands of training (millions)")
    axes[2].set_xlim(0, 1.6)
    axes[0].set_ylabel("exact profit, % of the perfect bettor's")
    handles, names = axes[2].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=9.5, frameon=False)
    fig.suptitle(
        "PPO on pb_gym/Discover-v0, seed 0: exact learning curve on 128 held-out tables x 400 hands "
        "(the initial policy never bets: 0%, below the axis)",
        fontsize=10.5,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out + ".png", dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
