"""Score a learned policy against the known optimum: the perfect-information bettor.

The exact calculator gives the EV of every bet for the cards the player has not seen, so this
environment is an RL benchmark with a known optimum: the flat perfect-information bettor (one unit on
the best of the scored bets whenever its exact EV is positive) is Bayes-optimal for one-hand decisions
at a flat stake. :func:`score` replays a policy on held-out seeds in the native vector environment (the
observations it was trained on, realized rewards) and, on the SAME hands, the perfect-information
bettor, the best linear effects-of-removal count (the atlas's: :mod:`pb_gym.experiments.atlas`) and never
betting. The scored bets may be any the table offers -- the seven spots, catalog side bets, a user's
own bets -- each priced exactly in the table's columns (:class:`pb_gym.catalog.TableBets`):

* exact conditional profit per hand dealt: the sum over a system's bets of stake x the exact EV of the
  cards unseen before the hand (no outcome noise: a narrow CI), and the realized profit per hand;
* both with 95% CIs over shoes (hands of a shoe are correlated, shoes are independent: ratio
  estimators of per-shoe sums, as in :mod:`pb_gym.experiments.counting`), the learned policy's share of the
  perfect bettor's profit and its regret (perfect minus learned) with paired CIs;
* calibration: the policy's probability of betting each scored bet against the exact EV of that bet
  before the hand, in bins (a good agent's curve jumps from ~0 to ~1 at EV = 0), from the greedy
  actions (the policy evaluated) and, where the algorithm has one, the policy's action distribution.

The policy is a :class:`Policy`: a saved SB3 model with its observation transform and VecNormalize
statistics, fed the environment's own observations. Episodes run as in training (the env's
``max_hands``, starting bankroll) and are reset where they end; a shoe ends at a reshuffle or a reset.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from pb_gym import exact
from pb_gym import rules as R
from pb_gym.agents import learned
from pb_gym.benchmark import Deal, ci_text
from pb_gym.envs import config
from pb_gym.experiments import atlas
from pb_gym.experiments.common import plotting, stats
from pb_gym.experiments.common.yaml_config import Strict
from pb_gym.experiments.counting.counts import best_threshold, effects_of_removal

EV_BINS = (-1.0, -0.10, -0.06, -0.04, -0.02, -0.01, 0.0, 0.01, 0.02, 0.04, 0.06, 0.10, 1.0e9)
"""Edges of the exact-EV bins of the calibration table and plot (per unit staked)."""


class DiscoveryConfig(Strict):
    """The ``discovery:`` section of a train config: the exact scoring of the trained policy."""

    bets: list[str] = Field(
        default_factory=lambda: ["dragon7", "panda8"],
        min_length=1,
        description="the bets the perfect-information bettor and the counts play",
    )
    tables: int = Field(500, ge=2, description="held-out tables scored in parallel")
    hands: int = Field(2000, ge=1, description="hands dealt per table (episodes reset as in training)")
    seed: int = Field(2_000_003, ge=0, description="held-out seed of the scoring deal")
    curve_points: int = Field(
        10,
        ge=0,
        le=1000,
        description="points of the exact learning curve "
        "(0: none); each scores the policy on curve_tables x curve_hands",
    )
    curve_tables: int = Field(128, ge=2, description="held-out tables of each curve point")
    curve_hands: int = Field(400, ge=1, description="hands per table of each curve point")
    curve_seed: int = Field(3_000_017, ge=0, description="held-out seed of the curve's deal")
    count_training_shoes: int = Field(
        2000, ge=2, description="shoes of the deal that picks each count's threshold (counting study method)"
    )
    count_training_seed: int = Field(
        1_000_001, ge=0, description="seed of the deal that picks the thresholds"
    )


# ------------------------------------------------------------------------------------ the policy
class Policy(learned.ModelActor):
    """A trained SB3 model as a function of the environment's observations (greedy actions, and the
    probability of betting each spot where the algorithm has an action distribution): the agents'
    :class:`pb_gym.agents.learned.ModelActor`, its action distribution read as well."""

    def __init__(
        self, model, algorithm: str, cfg: config.EnvConfig, obs_transform: str = "none", normalizer=None
    ) -> None:
        super().__init__(model, algorithm, cfg, obs_transform, normalizer)
        # the table's stake column (-1 = none) each action or choice index stakes
        choice_spot = cfg.choice_spot
        if cfg.action_mode == "discrete":
            k = len(cfg.stake_levels)
            first = int(cfg.allow_no_bet)
            spots = [-1] * first + [int(choice_spot[first + (a // k)]) for a in range(cfg.n_actions - first)]
            self.action_spot = np.array(spots, dtype=np.int64)
        else:
            self.action_spot = choice_spot.astype(np.int64)

    def act(
        self, obs, bankroll: np.ndarray, episode_start: np.ndarray, probabilities: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Greedy actions, and ``(n, n_columns)`` probabilities of staking each of the table's bet
        columns (None for DQN)."""
        import torch

        obs = self.prepare(obs)
        state_before = self.lstm_state
        actions = self.predict(obs, bankroll, episode_start)
        if not probabilities or self.algorithm == "DQN":
            return actions, None
        policy = self.model.policy
        with torch.no_grad():
            tensor, _ = policy.obs_to_tensor(obs)
            if self.algorithm == "RecurrentPPO":
                n = len(bankroll)
                states = state_before
                if states is None:
                    shape = (policy.lstm_actor.num_layers, n, policy.lstm_actor.hidden_size)
                    states = (np.zeros(shape, np.float32), np.zeros(shape, np.float32))
                device = policy.device
                lstm = tuple(torch.tensor(s, dtype=torch.float32, device=device) for s in states)
                dist, _ = policy.get_distribution(
                    tensor, lstm, torch.tensor(episode_start, dtype=torch.float32, device=device)
                )
            elif self.algorithm == "MaskablePPO":
                dist = policy.get_distribution(tensor, action_masks=self.masks)
            else:
                dist = policy.get_distribution(tensor)
            inner = dist.distribution
            first = inner[0] if isinstance(inner, (list, tuple)) else inner  # multidiscrete: bet choice
            probs = first.probs.cpu().numpy()
        out = np.zeros((probs.shape[0], self.cfg.n_columns))
        for index, spot in enumerate(self.action_spot):
            if spot >= 0:
                out[:, spot] += probs[:, index]
        return actions, out


# ----------------------------------------------------------------------- the best linear count
def linear_count(
    rules: R.Rules, bets: Sequence[str], shoes: int, seed: int, custom: Sequence[dict] = ()
) -> dict:
    """The atlas's best linear count for each bet (any catalog bet, or a user bet of ``custom``): tags
    proportional to the effects of removal (exact), true count = running count / decks unseen,
    threshold maximising the summed exact EV of the hands bet on a training deal (``shoes`` first
    shoes dealt with ``seed``)."""
    book = atlas.bet_book(rules, tuple(bets), tuple(custom))
    removal = effects_of_removal(R.full_shoe(rules.decks), book.expected_values)
    tags = np.array([atlas.eor_tags(removal["eor"][:, k], 10.0) for k in range(len(bets))])
    training = atlas.training_deal(rules, book, shoes, seed)
    true_count = atlas.true_counts(training["unseen"], tags, rules.decks)
    thresholds = [
        best_threshold(true_count[:, k], training["ev"][:, k])[0] if np.any(tags[k]) else math.inf
        for k in range(len(bets))
    ]
    return {"tags": tags, "thresholds": np.array(thresholds), "ev_full": removal["ev"], "eor": removal["eor"]}


def count_stakes(
    count: dict, composition: np.ndarray, spots: np.ndarray, decks: int, n_columns: int = R.N_BETS
) -> np.ndarray:
    """One unit on the counted bet whose true count reaches its threshold (the one with the higher
    linear EV estimate when several do), ``(n, n_columns)`` (the table's stake columns)."""
    full = R.full_shoe(decks).astype(np.float64)
    removed = full[None, :] - composition
    true_count = atlas.true_counts(composition, count["tags"], decks)
    estimate = count["ev_full"][None, :] + removed @ count["eor"] * (
        full.sum() / composition.sum(axis=1, keepdims=True)
    )
    estimate = np.where(true_count >= count["thresholds"][None, :], estimate, -np.inf)
    best = estimate.argmax(axis=1)
    bet = np.isfinite(estimate[np.arange(len(best)), best])
    stakes = np.zeros((len(best), n_columns))
    stakes[np.flatnonzero(bet), spots[best[bet]]] = 1.0
    return stakes


# ------------------------------------------------------------------------------------ the deal
class _Calibration:
    """The policy's bets against the exact EV of each scored bet before the hand, in the bins of
    :data:`EV_BINS`, and split at EV = 0 (hands, greedy bets, policy probability, the perfect
    bettor's bets)."""

    def __init__(self, bets: Sequence[str], spots: np.ndarray) -> None:
        self.bets, self.spots, self.n_bins = list(bets), spots, len(EV_BINS) - 1
        parts = ("hands", "greedy", "probability", "ev", "stake", "perfect")
        self.bins = {b: {part: np.zeros(self.n_bins) for part in parts} for b in bets}
        self.split = {"positive": np.zeros(4), "negative": np.zeros(4)}
        self.has_probs = True

    def add(self, ev: np.ndarray, stakes: np.ndarray, perfect: np.ndarray, probs: np.ndarray | None) -> None:
        n_bins = self.n_bins
        self.has_probs = self.has_probs and probs is not None
        for k, b in enumerate(self.bets):
            spot = self.spots[k]
            which = np.clip(np.searchsorted(EV_BINS, ev[:, spot], side="right") - 1, 0, n_bins - 1)
            c = self.bins[b]
            c["hands"] += np.bincount(which, minlength=n_bins)
            c["greedy"] += np.bincount(which, weights=stakes[:, spot] > 0, minlength=n_bins)
            c["ev"] += np.bincount(which, weights=ev[:, spot], minlength=n_bins)
            c["stake"] += np.bincount(which, weights=stakes[:, spot], minlength=n_bins)
            c["perfect"] += np.bincount(which, weights=perfect[:, spot] > 0, minlength=n_bins)
            if probs is not None:
                c["probability"] += np.bincount(which, weights=probs[:, spot], minlength=n_bins)
            for key, mask in (("positive", ev[:, spot] > 0), ("negative", ev[:, spot] <= 0)):
                self.split[key] += [
                    mask.sum(),
                    (stakes[mask, spot] > 0).sum(),
                    probs[mask, spot].sum() if probs is not None else 0.0,
                    (perfect[mask, spot] > 0).sum(),
                ]

    def _rows(self, c: dict) -> list[dict]:
        h = np.maximum(c["hands"], 1)

        def share(part: str, i: int) -> float | None:
            return float(c[part][i] / h[i]) if c["hands"][i] else None

        return [
            {
                "ev_from": EV_BINS[i],
                "ev_to": EV_BINS[i + 1],
                "hands": int(c["hands"][i]),
                "mean_ev": share("ev", i),
                "p_bet_greedy": share("greedy", i),
                "mean_stake": share("stake", i),
                "p_bet_perfect": share("perfect", i),
                "p_bet_policy": share("probability", i) if self.has_probs else None,
            }
            for i in range(self.n_bins)
        ]

    def figures(self) -> dict:
        """``calibration`` (per bet, per bin) and ``p_bet_when_positive`` / ``_negative``."""
        out: dict[str, Any] = {"calibration": {b: self._rows(c) for b, c in self.bins.items()}}
        for key, v in (
            ("p_bet_when_positive", self.split["positive"]),
            ("p_bet_when_negative", self.split["negative"]),
        ):
            out[key] = {
                "greedy": v[1] / max(v[0], 1),
                "policy": v[2] / max(v[0], 1) if self.has_probs else None,
                "perfect": v[3] / max(v[0], 1),
                "hands": int(v[0]),
            }
        return out


def _figures(
    sums: dict, n: np.ndarray, systems: Sequence[str], bets: Sequence[str], count: dict | None
) -> dict:
    """Each system's profit, bet rate and stake per hand; the learned policy's share of the perfect
    bettor's profit and its regret (paired), and against the count where there is one."""
    out: dict[str, Any] = {"systems": {}}
    for name in systems:
        out["systems"][name] = {
            "exact_profit_per_hand": stats.ratio_ci(sums[f"exact/{name}"], n),
            "realized_profit_per_hand": stats.ratio_ci(sums[f"real/{name}"], n),
            "bet_rate": stats.ratio_ci(sums[f"bets/{name}"], n),
            "staked_per_hand": stats.ratio_ci(sums[f"staked/{name}"], n),
        }
    learned_exact, perfect_exact = sums["exact/learned"], sums["exact/perfect"]
    learned_real, perfect_real = sums["real/learned"], sums["real/perfect"]
    out["share_of_perfect_exact"] = stats.ratio_ci(learned_exact, perfect_exact)
    out["share_of_perfect_realized"] = stats.ratio_ci(learned_real, perfect_real)
    out["regret_exact"] = stats.ratio_ci(perfect_exact - learned_exact, n)
    out["regret_realized"] = stats.ratio_ci(perfect_real - learned_real, n)
    if count is not None:
        out["learned_minus_count_exact"] = stats.ratio_ci(learned_exact - sums["exact/count"], n)
        out["count_share_of_perfect_exact"] = stats.ratio_ci(sums["exact/count"], perfect_exact)
        out["count_thresholds"] = {
            b: (None if math.isinf(t) else float(t)) for b, t in zip(bets, count["thresholds"], strict=True)
        }
    return out


def score(
    policy: Policy,
    env_kwargs: dict,
    bets: Sequence[str],
    tables: int,
    hands: int,
    seed: int,
    count: dict | None = None,
    calibration: bool = True,
) -> dict:
    """Play ``policy`` on ``tables`` x ``hands`` held-out hands (seed ``seed``) beside the perfect
    bettor (and the linear ``count`` if given); the JSON-ready statistics (see the module docstring).
    The deal, its per-hand loop and its per-shoe sums are the benchmark scorer's
    (:meth:`pb_gym.benchmark.Deal.play`)."""
    systems = ("learned", "perfect", "count", "never") if count is not None else ("learned", "perfect")
    kinds = ("exact", "real", "bets", "staked")
    deal = Deal(env_kwargs, tables, seed, [f"{kind}/{s}" for kind in kinds for s in systems])
    cfg = deal.cfg
    rules, table = cfg.rules, cfg.bets
    spots = np.array([table.column(b) for b in bets], dtype=np.int64)  # any bet the table offers
    policy.reset()
    rows = np.arange(tables)
    calib = _Calibration(bets, spots)
    # episodes that ended start again, as in training (a reset starts a new shoe); the policy is also
    # given the bankrolls (MaskablePPO's masks) and the episode starts (RecurrentPPO's state)
    for hand in deal.play(hands, functools.partial(policy.act, probabilities=calibration)):
        # the systems' stakes and exact / realized profits on this hand
        best, positive = exact.best_positive(hand.ev[:, spots])
        perfect = np.zeros_like(hand.stakes)
        perfect[rows[positive], spots[best[positive]]] = 1.0
        placed = {"learned": hand.stakes, "perfect": perfect}
        if count is not None:
            placed["count"] = count_stakes(
                count, hand.composition.astype(np.float64), spots, rules.decks, table.n_columns
            )
            placed["never"] = np.zeros_like(hand.stakes)
        for name, st in placed.items():
            realized = hand.reward if name == "learned" else (st * hand.payoffs).sum(axis=1)
            deal.add_stakes(name, st, hand.ev, realized)
        if calibration:
            calib.add(hand.ev, hand.stakes, perfect, hand.extra)
    sums, n = deal.totals()
    out: dict[str, Any] = {
        "tables": tables,
        "hands_per_table": hands,
        "seed": seed,
        "hands": int(n.sum()),
        "shoes": len(n),
        "bets": list(bets),
        **_figures(sums, n, systems, bets, count),
    }
    if calibration:
        out.update(calib.figures())
    return out


# ------------------------------------------------------------------------------------ outputs
def report(result: dict) -> str:
    """The scoring as text: profit per hand dealt of each system, shares, regret, calibration split."""
    lines = [
        f"discovery: {result['hands']:,} held-out hands ({result['tables']} tables x "
        f"{result['hands_per_table']} hands, {result['shoes']:,} shoes, seed {result['seed']}); "
        f"bets scored: {', '.join(result['bets'])}; units per hand dealt, 95% CIs over shoes",
        f"{'system':<10} {'bet rate':>8} {'exact profit / hand':>32} {'realized profit / hand':>32}",
    ]
    for name, s in result["systems"].items():
        lines.append(
            f"{name:<10} {s['bet_rate']['estimate']:>8.2%} {ci_text(s['exact_profit_per_hand']):>32} "
            f"{ci_text(s['realized_profit_per_hand']):>32}"
        )
    lines.append(f"learned / perfect, exact:    {ci_text(result['share_of_perfect_exact'], 100, 1)} %")
    lines.append(f"learned / perfect, realized: {ci_text(result['share_of_perfect_realized'], 100, 1)} %")
    lines.append(f"regret (perfect - learned), exact: {ci_text(result['regret_exact'])}")
    if "learned_minus_count_exact" in result:
        lines.append(
            f"count / perfect, exact:      {ci_text(result['count_share_of_perfect_exact'], 100, 1)} %"
        )
        lines.append(f"learned - count, exact: {ci_text(result['learned_minus_count_exact'])}")
    if "p_bet_when_positive" in result:
        pos, neg = result["p_bet_when_positive"], result["p_bet_when_negative"]
        lines.append(
            f"P(bet | its EV > 0) greedy {pos['greedy']:.3f}, policy "
            f"{pos['policy'] if pos['policy'] is None else round(pos['policy'], 4)}, "
            f"perfect {pos.get('perfect', math.nan):.3f}; "
            f"P(bet | EV <= 0) greedy {neg['greedy']:.4f}, policy "
            f"{neg['policy'] if neg['policy'] is None else round(neg['policy'], 5)}"
        )
    return "\n".join(lines)


def plot_calibration(result: dict, path: Path, title: str) -> Path:
    """P(bet) against the exact EV of the bet before the hand, binned, one line per scored bet, beside
    the perfect-information bettor's (which stakes only the best of the scored bets: a positive bet
    whose neighbour is better is not its choice, so its curve too stays below 1)."""
    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (bet, rows) in enumerate(result["calibration"].items()):
        pts = [r for r in rows if r["hands"] >= 20]
        x = [100 * r["mean_ev"] for r in pts]
        ax.plot(x, [r["p_bet_greedy"] for r in pts], "o-", color=f"C{k}", label=f"{bet}: greedy action")
        if pts and pts[0]["p_bet_policy"] is not None:
            ax.plot(
                x,
                [r["p_bet_policy"] for r in pts],
                "s--",
                color=f"C{k}",
                alpha=0.6,
                label=f"{bet}: policy probability",
            )
        ax.plot(
            x,
            [r["p_bet_perfect"] for r in pts],
            ":",
            color=f"C{k}",
            lw=2,
            alpha=0.5,
            label=f"{bet}: perfect information (the optimum)",
        )
    ax.axvline(0.0, color="k", lw=0.6, ls=":")
    ax.set_xlabel("exact EV of the bet before the hand (% of the stake; bin means)")
    ax.set_ylabel("P(bet)")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return plotting.save(fig, path)


CURVE_FIELDS = (
    "timesteps",
    "training_seconds",
    "training_cpu_seconds",
    "learned_exact",
    "learned_exact_lo",
    "learned_exact_hi",
    "perfect_exact",
    "share_of_perfect",
    "bet_rate",
    "p_bet_when_positive",
    "p_bet_when_negative",
)


def curve_row(
    timesteps: int,
    result: dict,
    training_seconds: float | None = None,
    training_cpu_seconds: float | None = None,
) -> dict:
    """One point of the exact learning curve from a :func:`score` result, after ``training_seconds``
    of training (wall time, the curve's own scoring left out; None: not measured) and
    ``training_cpu_seconds`` (the same in CPU time of every thread of the process)."""
    learned = result["systems"]["learned"]["exact_profit_per_hand"]
    return {
        "timesteps": timesteps,
        "training_seconds": training_seconds,
        "training_cpu_seconds": training_cpu_seconds,
        "learned_exact": learned["estimate"],
        "learned_exact_lo": learned["ci95"][0],
        "learned_exact_hi": learned["ci95"][1],
        "perfect_exact": result["systems"]["perfect"]["exact_profit_per_hand"]["estimate"],
        "share_of_perfect": result["share_of_perfect_exact"]["estimate"],
        "bet_rate": result["systems"]["learned"]["bet_rate"]["estimate"],
        "p_bet_when_positive": result["p_bet_when_positive"]["greedy"],
        "p_bet_when_negative": result["p_bet_when_negative"]["greedy"],
    }


def write_curve(rows: list[dict], out: Path, title: str) -> list[Path]:
    """``learning_curve_exact.csv`` / ``.png``: exact conditional profit per hand vs timesteps."""
    csv_path, png_path = out / "learning_curve_exact.csv", out / "learning_curve_exact.png"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CURVE_FIELDS))
        writer.writeheader()
        writer.writerows(rows)
    plt = plotting.pyplot()
    x = [r["timesteps"] for r in rows]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax.fill_between(
        x,
        [r["learned_exact_lo"] for r in rows],
        [r["learned_exact_hi"] for r in rows],
        color="C0",
        alpha=0.25,
    )
    ax.plot(x, [r["learned_exact"] for r in rows], "o-", color="C0", label="learned (greedy), 95% CI")
    ax.plot(x, [r["perfect_exact"] for r in rows], "--", color="C3", label="perfect information")
    ax.axhline(0.0, color="k", lw=0.6, ls=":", label="never bet")
    ax.set_ylabel("exact profit per hand dealt (units)")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    ax2.plot(x, [r["p_bet_when_positive"] for r in rows], "o-", color="C2", label="P(bet | EV > 0)")
    ax2.plot(x, [r["p_bet_when_negative"] for r in rows], "o-", color="C1", label="P(bet | EV <= 0)")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_ylabel("greedy bet rate")
    ax2.set_xlabel("timesteps (hands, all tables)")
    ax2.legend(fontsize=7)
    plotting.save(fig, png_path)
    return [csv_path, png_path]
