"""Card counting in Punto Banco: where the exact odds of the remaining shoe turn positive.

``pb-gym experiment counting CONFIG [--json] [--out DIR] [--backend serial|processes|dask]
[--scheduler ADDRESS] [--workers N]``

Read top to bottom (the statistics over shoes in :mod:`pb_gym.experiments.counting.shoe_statistics`):

1. Effects of removal. For every studied bet, EoR(r) = EV(full shoe minus one card of rank r) - EV(full
   shoe), from the exact calculator. By exchangeability the count-weighted average of the EVs after a
   removal is the EV before it, so sum_r n_r EoR(r) = 0: a count with tags proportional to EoR is
   *balanced*. The pair bets are the corner case: every rank is equally common in a full shoe, so every
   EoR is the same, hence zero -- no linear count can see them (their EV depends on sum_r n_r^2).
2. Linear counts (:mod:`pb_gym.experiments.counting.counts`). For each counted bet, tags proportional to its
EoR
   (scaled so that the largest tag is ``max_tag``, optionally the nearest *balanced* whole numbers);
   running count = sum of the tags of the cards seen; true count = running count / decks unseen.
3. Deal. ``shoes`` shoes, one engine table per shoe, until the table's first shoe ends (hands of later
   shoes are not counted). The main deal is cut into chunks of ``chunk_shoes`` shoes, chunk ``i`` seeded
   with ``SeedSequence(seed).spawn(n)[i]`` (:mod:`pb_gym.experiments.common.scale`), so it can run serially,
   in local
   processes or on a Dask cluster with the same result to the last bit. Before every hand, the exact
   EV of every bet is computed from ``state.unseen`` (the cards the players have not seen: the shoe
   plus the face-down burn). One ``exact.outcome_probabilities`` call per round serves every bet and
   variant (it is multiplied by each variant's paytable); the pair bets use the closed-form pair
   probability.
4. Bettors. The perfect-information bettor stakes one unit on a bet whenever its exact EV > 0; the
   count-based bettor stakes one unit when the true count reaches a threshold. The threshold is chosen
   on a separate *training* deal (``training_seed``, ``training_shoes``) as the value that maximises the
   summed exact EV of the hands it would bet, then evaluated on the main deal (``seed``). Both bettors'
   stakes are decided before the hand from what has been seen; their realized profit is the engine's
   dealt payoff (``hand.payoffs(rules)``) on the hands they bet.
5. Statistics. Hands within a shoe are correlated, so every confidence interval is computed over shoes:
   each figure is a ratio of per-shoe sums (e.g. sum of max(EV, 0) over hands dealt), with the
   delta-method (ratio-estimator) standard error across shoes. A chunk therefore returns sums only --
   per shoe (one row per shoe of the chunk), per depth bin, and the moments of (true count, EV) -- never
   per-hand arrays; the merge concatenates the per-shoe rows in chunk order and adds the rest, and every
   figure is computed from the merged sums
   (:mod:`pb_gym.experiments.counting.shoe_statistics`).
"""

from __future__ import annotations

import functools
import math
import os
import time
import typing
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from pb_gym import engine, exact, strict_json
from pb_gym import rules as R
from pb_gym.experiments.common import chunk_store, plotting, scale, study
from pb_gym.experiments.common.stats import ratio_ci
from pb_gym.experiments.common.yaml_config import ConfigError, RulesConfig, Strict
from pb_gym.experiments.counting import counts
from pb_gym.experiments.counting.advantage import RiskConfig, advantage_table
from pb_gym.experiments.counting.shoe_statistics import (
    PER_SHOE,
    bet_figures,
    correlation,
    count_figures,
    depth_figures,
    merge,
    shoe_sums,
)

# --------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------
StudiedBet = Literal[
    "banker",
    "player",
    "tie_8to1",
    "tie_9to1",
    "player_pair",
    "banker_pair",
    "dragon7",
    "panda8",
    "banker_no_commission",
    "banker_ez",
]
STUDIED: tuple[str, ...] = typing.get_args(StudiedBet)
"""Every bet the experiment studies (column order of all per-hand arrays)."""


def separate_seeds(training_seed: int, info: ValidationInfo) -> int:
    """A study config's ``training_seed`` validator: it must differ from its ``seed`` (the counts'
    thresholds are chosen on a deal of their own)."""
    if training_seed == info.data.get("seed"):
        raise ValueError(f"must differ from seed ({training_seed}): thresholds are chosen on a separate deal")
    return training_seed


class CountConfig(Strict):
    """A count given by its tags (an entry of ``counts:``): how a player keeps it, replayed as given."""

    name: str = Field(min_length=1, max_length=64, description="the count's name in the report")
    bet: StudiedBet = Field(description="the bet the count plays")
    tags: tuple[float, ...] = Field(description="10 tags: A, 2, ..., 9, then the ten-value cards")
    start: float = Field(0.0, description="the running count at the start of the shoe")
    count: Literal["running", "true"] = Field(
        "true", description="bet on the running count, or on the running count per deck unseen"
    )
    trigger: float = Field(description="bet one unit when the count (start included) is at least this")
    source: str = Field("", description="where the count is published")

    @field_validator("tags")
    @classmethod
    def _ten_tags(cls, tags: tuple[float, ...]) -> tuple[float, ...]:
        if len(tags) != 10 or not all(math.isfinite(t) for t in tags):
            raise ValueError(f"10 finite numbers (A, 2, ..., 9, ten-value); got {len(tags)}")
        return tags


class CountingConfig(Strict):
    """``configs/experiments/counting.yaml``."""

    rules: RulesConfig = Field(RulesConfig(), description="the rules of the shoes dealt")
    shoes: int = Field(10_000, ge=2, description="shoes dealt (one engine table each)")
    seed: int = Field(1, ge=0, description="seed of the main deal (chunk i: SeedSequence(seed).spawn(n)[i])")
    chunk_shoes: int = Field(
        2_500,
        ge=1,
        description="shoes per chunk of the main deal (the unit of "
        "work of a backend; changes the dealt hands)",
    )
    training_shoes: int = Field(2_000, ge=2, description="shoes of the deal that picks thresholds")
    training_seed: int = Field(1_000_001, ge=0, description="seed of the threshold deal (not seed)")
    count_bets: tuple[StudiedBet, ...] = Field(
        ("dragon7", "panda8", "tie_9to1", "player_pair", "banker_pair"),
        description="the bets given a fitted linear count",
    )
    max_tag: float = Field(10.0, gt=0, description="largest |tag| of a count")
    integer_tags: bool = Field(
        True, description="round the tags to the nearest balanced whole numbers (sum over a full shoe 0)"
    )
    depth_bin_cards: int = Field(26, ge=1, description="width of a depth bin, in cards")
    counts: tuple[CountConfig, ...] = Field(
        (), max_length=16, description="counts given by their tags, replayed beside the fitted ones"
    )
    advantage: RiskConfig = Field(RiskConfig(), description="the advantage player's figures (below)")

    @field_validator("counts")
    @classmethod
    def _distinct_names(cls, entries: tuple[CountConfig, ...], info: ValidationInfo) -> tuple:
        names = [c.name for c in entries]
        clash = set(names) & set(info.data.get("count_bets", ())) or len(set(names)) != len(names)
        if clash:
            raise ValueError("each count's name at most once, and none the name of a count bet")
        return entries

    _separate_seeds = field_validator("training_seed")(separate_seeds)

    @field_validator("count_bets")
    @classmethod
    def _distinct(cls, count_bets: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(count_bets)) != len(count_bets):
            raise ValueError("each bet at most once")
        return count_bets


# --------------------------------------------------------------------------------------------------
# The studied bets: (rules, column of BETS) for each; variants are other Rules objects on the same hands
# --------------------------------------------------------------------------------------------------
def studied_rules(base: R.Rules) -> dict[str, tuple[R.Rules, int]]:
    """The rules whose paytable settles each studied bet, and the bet's column in :data:`BETS`."""
    standard = base.replace(banker_variant="standard", tie_pays=8)
    col = R.BETS.index
    return {
        "banker": (standard, col("banker")),
        "player": (standard, col("player")),
        "tie_8to1": (standard, col("tie")),
        "tie_9to1": (standard.replace(tie_pays=9), col("tie")),
        "player_pair": (standard, col("player_pair")),
        "banker_pair": (standard, col("banker_pair")),
        "dragon7": (standard, col("dragon7")),
        "panda8": (standard, col("panda8")),
        "banker_no_commission": (standard.replace(banker_variant="no-commission"), col("banker")),
        "banker_ez": (standard.replace(banker_variant="ez"), col("banker")),
    }


def _fixed_order_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` summed term by term in a fixed order. A BLAS product's rounding can depend on the
    number of rows and on the CPU; this one gives the same bits for a hand whatever the chunk's size and
    wherever the chunk runs (elementwise IEEE operations only)."""
    return sum(a[..., i, None] * b[i] for i in range(b.shape[0]))


def studied_evs(compositions: np.ndarray, bets: dict[str, tuple[R.Rules, int]]) -> np.ndarray:
    """Exact EV of every studied bet, ``(n, len(STUDIED))``: one outcome-probability call for all."""
    probabilities = exact.outcome_probabilities(compositions)
    pair = exact.pair_probability(compositions)
    columns = np.stack([rules.paytable()[:, column] for rules, column in bets.values()], axis=1)
    ev = _fixed_order_dot(probabilities, columns)
    for k, (name, (rules, _)) in enumerate(bets.items()):
        if name in ("player_pair", "banker_pair"):
            ev[..., k] = exact.pair_expected_value(pair, rules.pair_pays)
    return ev


# --------------------------------------------------------------------------------------------------
# Deal every shoe once, recording the pre-hand exact EVs, true counts and dealt payoffs
# --------------------------------------------------------------------------------------------------
def deal_shoes(
    rules: R.Rules,
    bets: dict[str, tuple[R.Rules, int]],
    n_shoes: int,
    seed: int | np.random.SeedSequence,
    tags: np.ndarray,
    starts: np.ndarray | None = None,
    running: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Deal the first shoe of ``n_shoes`` tables in parallel; one row per hand dealt.

    ``tags`` is ``(c, 13)`` (one count per row). Returns ``shoe`` (table index), ``depth`` (cards out of
    the shoe before the hand, burn included), ``ev`` (exact, before the hand), ``payoff`` (dealt net
    win per unit on each studied bet) and ``true_count`` (``(hands, c)``): the tags of the cards seen,
    summed, per deck unseen; for a count whose ``running`` flag is set, the sum itself; plus its
    ``starts`` entry (the count at the start of the shoe; default all 0, all true counts).
    """
    c = tags.shape[0]
    starts = np.zeros(c) if starts is None else np.asarray(starts, dtype=np.float64)
    running = np.zeros(c, dtype=bool) if running is None else np.asarray(running, dtype=bool)
    given = bool(np.any(starts) or np.any(running))
    state = engine.init(rules, n_shoes, seed=seed)
    hand = engine.HandResult.empty(n_shoes)
    full = R.full_shoe(rules.decks)
    payoff_rules = list(dict.fromkeys(r for r, _ in bets.values()))  # distinct Rules objects
    columns = [(payoff_rules.index(r), c) for r, c in bets.values()]
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("shoe", "depth", "ev", "payoff", "true_count")}
    tables = np.arange(n_shoes)
    while True:
        live = counts.live_tables(rules, state)
        if not live.any():
            break
        unseen = state.unseen[live].astype(np.int64)
        ev = studied_evs(unseen, bets)
        decks_unseen = unseen.sum(axis=1) / R.CARDS_PER_DECK
        seen = _fixed_order_dot((full[None, :] - unseen).astype(np.float64), tags.T)
        true_count = seen / decks_unseen[:, None]
        if given:
            true_count = np.where(running[None, :], seen, true_count) + starts[None, :]
        depth = state.position[live].copy()
        engine.deal(rules, state, hand)
        if hand.shuffled[live].any():
            raise AssertionError("a live table reshuffled: the first-shoe bookkeeping is wrong")
        dealt = [hand.payoffs(r)[live] for r in payoff_rules]
        rows["payoff"].append(np.stack([dealt[i][:, c] for i, c in columns], axis=1).astype(np.float32))
        rows["shoe"].append(tables[live].astype(np.int32))
        rows["depth"].append(depth.astype(np.int16))
        rows["ev"].append(ev)
        rows["true_count"].append(true_count.astype(np.float32))
    return {k: np.concatenate(v) for k, v in rows.items()}


# --------------------------------------------------------------------------------------------------
# One chunk of the main deal: its shoes dealt and reduced to mergeable sums
# (pb_gym.experiments.counting.shoe_statistics)
# --------------------------------------------------------------------------------------------------
def deal_chunk(
    chunk: scale.Chunk,
    rules: R.Rules,
    tags: np.ndarray,
    count_index: list[int],
    thresholds: list[float],
    bin_cards: int,
    starts: np.ndarray | None = None,
    running: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The task of one chunk of the main deal: its ``chunk.size`` shoes, dealt from the chunk's own seed,
    reduced to sums (:func:`shoe_sums`). Module level, with plain arguments, so that local processes
    and Dask workers can run it (``functools.partial(deal_chunk, rules=..., ...)`` pickles)."""
    dealt = deal_shoes(rules, studied_rules(rules), chunk.size, chunk.seed, tags, starts, running)
    return shoe_sums(dealt, chunk.size, count_index, thresholds, rules.n_cards // bin_cards + 1, bin_cards)


# --------------------------------------------------------------------------------------------------
# The experiment
# --------------------------------------------------------------------------------------------------
def run(
    config: CountingConfig,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    store: chunk_store.ChunkStore | None = None,
) -> dict:
    """Run the whole experiment; the JSON-ready result.

    The main deal runs in chunks on ``backend`` (see :func:`pb_gym.experiments.common.scale.run`); the result
    is the
    same, to the last bit, on every backend, except the wall-clock times under ``"timings"``.
    ``progress`` prints a line to stderr per finished chunk.
    """
    rules = config.rules.to_rules()
    bets = studied_rules(rules)
    full = R.full_shoe(rules.decks)
    timings: dict[str, float] = {}
    # A shoe deals about cards / 4.94 hands; each is a row of depth, EVs, payoffs and true counts
    # (kept twice while the rows are joined), and a shoe leaves a row of sums per statistic.
    hands_per_shoe = (rules.n_cards - rules.cards_behind_cut) / 4.9
    per_shoe = engine.table_bytes(rules) + hands_per_shoe * 2 * (
        6 + 8 * len(STUDIED) + 4 * len(STUDIED) + 4 * len(config.count_bets)
    )
    kept = 2 * 8 * len(PER_SHOE) * len(STUDIED)
    scale.require_memory(
        "the training deal (one piece)",
        config.training_shoes,
        config.training_shoes,
        item="shoe",
        chunk_key="training_shoes",
        items_key="training_shoes",
        working_per_item=per_shoe,
        kept_per_item=kept,
    )
    scale.require_memory(
        "the counting study",
        config.shoes,
        config.chunk_shoes,
        item="shoe",
        chunk_key="chunk_shoes",
        items_key="shoes",
        working_per_item=per_shoe,
        kept_per_item=kept,
        parallel=1 if backend == "serial" else workers or os.cpu_count() or 1,
    )

    # 1. effects of removal; exchangeability check on the full shoe
    t0 = time.perf_counter()
    removal = counts.effects_of_removal(full, functools.partial(studied_evs, bets=bets))
    ev_full, eor = removal["ev"], removal["eor"]
    exchangeability = np.abs(full @ removal["ev_removed"] / full.sum() - ev_full)

    # 2. linear counts
    count_index = [STUDIED.index(b) for b in config.count_bets]
    tags = np.array(
        [counts.eor_tags(eor[:, k], config.max_tag, config.integer_tags) for k in count_index]
    ).reshape(len(count_index), R.N_RANKS)
    timings["effects_of_removal_s"] = time.perf_counter() - t0

    # 3a. training deal (one local deal: its thresholds are an input of every main chunk)
    t0 = time.perf_counter()
    training = deal_shoes(rules, bets, config.training_shoes, config.training_seed, tags)
    thresholds = []
    for j, k in enumerate(count_index):
        if not np.any(tags[j]):
            thresholds.append(math.inf)
            continue
        thresholds.append(counts.best_threshold(training["true_count"][:, j], training["ev"][:, k])[0])
    timings["training_deal_s"] = time.perf_counter() - t0
    # the counts given by their tags join the fitted ones, with their own start, kind and trigger
    fitted = len(count_index)
    given = config.counts
    count_index = count_index + [STUDIED.index(c.bet) for c in given]
    thresholds = thresholds + [float(c.trigger) for c in given]
    tags = np.concatenate(
        [tags, np.array([counts.tags_by_rank(c.tags) for c in given]).reshape(-1, R.N_RANKS)]
    )
    starts = np.array([0.0] * fitted + [c.start for c in given])
    running = np.array([False] * fitted + [c.count == "running" for c in given])

    # 3b. main deal, in chunks of shoes; each chunk returns sums, merged exactly in chunk order
    t0 = time.perf_counter()
    chunks = scale.plan(config.shoes, config.chunk_shoes, config.seed)
    task = functools.partial(
        deal_chunk,
        rules=rules,
        tags=tags,
        count_index=count_index,
        thresholds=thresholds,
        bin_cards=config.depth_bin_cards,
        starts=starts,
        running=running,
    )
    with scale.progress_printer("counting: main deal", progress, len(chunks)) as printer:
        main = merge(scale.run(task, chunks, backend, scheduler, workers, printer, store=store))
    timings["main_deal_s"] = time.perf_counter() - t0

    # 4-5. statistics: ratios of per-shoe sums, CIs over shoes
    n = main["hands"]  # hands dealt, per shoe
    hands = int(n.sum())
    per_bet = bet_figures(main, STUDIED, ev_full, eor, config.advantage)
    by_count: dict[str, dict] = {}
    for j, name in enumerate([*config.count_bets, *(c.name for c in given)]):
        bet = STUDIED[count_index[j]]
        entry: dict = {
            "bet": bet,
            "tags": {rank: float(tags[j, r]) for r, rank in enumerate(R.RANKS)},
            "balance": float(full @ tags[j]),
            "threshold": None if math.isinf(thresholds[j]) else thresholds[j],
        }
        if j >= fitted:
            spec = given[j - fitted]
            entry.update({"start": spec.start, "count": spec.count, "source": spec.source})
        if not np.any(tags[j]):
            entry["note"] = (
                "no linear count: every effect of removal is zero (all ranks are equally "
                "common in a full shoe, so removing any one card changes the EV by the "
                "same amount, and exchangeability makes that amount zero)"
            )
            by_count[name] = entry
            continue
        entry["threshold_chosen_on"] = (
            f"training deal: seed {config.training_seed}, {config.training_shoes} shoes"
            if j < fitted
            else "given (the count's trigger)"
        )
        entry.update(count_figures(main, j, per_bet[bet], config.advantage))
        by_count[name] = entry
    depth = depth_figures(main, STUDIED, config.depth_bin_cards)

    timings["total_s"] = sum(timings.values())
    return {
        "experiment": "counting",
        "rules": config.rules.model_dump(),
        "shoes": config.shoes,
        "hands": hands,
        "hands_per_shoe": hands / config.shoes,
        "seed": config.seed,
        "chunk_shoes": config.chunk_shoes,
        "chunks": len(chunks),
        "training": {
            "seed": config.training_seed,
            "shoes": config.training_shoes,
            "hands": int(training["ev"].shape[0]),
        },
        "exchangeability_max_error": float(np.max(exchangeability)),
        "advantage": config.advantage.model_dump(),
        "bets": per_bet,
        "counts": by_count,
        "by_depth": depth,
        "timings": timings,
    }


# --------------------------------------------------------------------------------------------------
# Report, plot, entry point
# --------------------------------------------------------------------------------------------------
def _ci(entry: dict, factor: float = 100.0, digits: int = 3) -> str:
    if entry["estimate"] is None:
        return "n/a"
    lo, hi = entry["ci95"]
    return f"{factor * entry['estimate']:.{digits}f} [{factor * lo:.{digits}f}, {factor * hi:.{digits}f}]"


def report(result: dict) -> str:
    """The human-readable report (percentages per unit staked; CIs are 95% over shoes)."""
    lines = [
        f"Counting experiment: {result['shoes']:,} shoes, {result['hands']:,} hands "
        f"({result['hands_per_shoe']:.2f} per shoe); {result['rules']['decks']} decks, burn "
        f"{result['rules']['burn']}, cut card {result['rules']['cut_card']}",
        f"time: main deal {result['timings']['main_deal_s']:.1f} s (exact EV of every bet "
        f"before every hand), total {result['timings']['total_s']:.1f} s",
        f"exchangeability check (full shoe, every bet): max error {result['exchangeability_max_error']:.1e}",
        "",
        "Perfect-information bettor (one unit whenever the exact EV > 0); % per unit, [95% CI over shoes]:",
        f"{'bet':<22}{'full-shoe EV':>13}  {'share of hands EV>0':<24}"
        f"{'mean EV when >0':<26}{'gain/hand predicted':<24}{'gain/hand realized':<24}",
    ]
    for name, b in result["bets"].items():
        lines.append(
            f"{name:<22}{100 * b['ev_full_shoe']:>12.4f}%  "
            f"{_ci(b['share_positive']):<24}{_ci(b['mean_ev_when_positive']):<26}"
            f"{_ci(b['gain_per_hand_predicted'], digits=4):<24}"
            f"{_ci(b['gain_per_hand_realized'], digits=4):<24}"
        )
    lines += ["", "Cut-card effect: average exact EV per hand dealt minus the full-shoe EV (%):"]
    for name, b in result["bets"].items():
        verdict = "significant" if b["cut_card_effect_significant"] else "not significant"
        lines.append(f"  {name:<22}{_ci(b['cut_card_effect'], digits=5):<36}{verdict}")
    lines += ["", "Count-based bettor (threshold chosen on the training deal) vs perfect information:"]
    for name, c in result["counts"].items():
        tags = " ".join(f"{rank}:{c['tags'][rank]:+g}" for rank in R.RANKS)
        lines.append(f"  {name}: tags {tags} (balance {c['balance']:+g})")
        if "note" in c:
            lines.append(f"    {c['note']}")
            continue
        if c["threshold"] is None:
            lines.append("    never bets: no threshold has a positive summed EV on the training deal")
            continue
        lines.append(
            f"    bet when true count >= {c['threshold']:.3f}; corr(TC, EV) "
            f"{c['correlation_true_count_ev']:.3f}"
        )
        lines.append(
            f"    count:   hands bet {_ci(c['share_of_hands_bet'])}%, profit/hand "
            f"predicted {_ci(c['profit_per_hand_predicted'], digits=4)}%, realized "
            f"{_ci(c['profit_per_hand_realized'], digits=4)}%"
        )
        lines.append(
            f"    perfect: hands bet {100 * c['perfect_info_share_of_hands_bet']:.3f}%, "
            f"profit/hand predicted {100 * c['perfect_info_profit_per_hand_predicted']:.4f}%,"
            f" realized {100 * c['perfect_info_profit_per_hand_realized']:.4f}%; the count "
            f"captures {100 * (c['fraction_of_perfect_info_gain'] or 0):.0f}% of it"
        )
    rows = [(f"count: {name}", c["advantage"]) for name, c in result["counts"].items() if "advantage" in c]
    rows += [(f"perfect information: {name}", b["advantage"]) for name, b in result["bets"].items()]
    lines += [
        "",
        "The advantage player's figures (one unit a bet; win rate = exact EV per hand bet, SD from the "
        "dealt payoffs; the double barrier resamples the dealt shoes, [95% CI]):",
        "",
        advantage_table(rows, result["advantage"]),
    ]
    return "\n".join(lines)


def plot_depth(result: dict, path: Path) -> None:
    """Share of hands with EV > 0 and mean EV when positive, against cards dealt."""
    plt = plotting.pyplot()
    depth = result["by_depth"]
    x = np.array(depth["bin_start_cards"]) + result.get("depth_bin_cards", 0) / 2
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, stats in depth["bets"].items():
        share = np.array([np.nan if v is None else v for v in stats["share_positive"]])
        mean = np.array([np.nan if v is None else v for v in stats["mean_ev_when_positive"]])
        if not np.nansum(share) > 0:
            continue
        style = {
            "marker": ".",
            "label": name,
            "linestyle": "--" if name == "banker_pair" else "-",
        }  # = player_pair exactly
        axes[0].plot(x, 100 * share, **style)
        axes[1].plot(x, 100 * mean, **style)
    axes[0].set_yscale("symlog", linthresh=0.01)
    axes[0].set_ylabel("hands with EV > 0 (%)")
    axes[1].set_ylabel("mean EV when positive (% of stake)")
    for ax in axes:
        ax.set_xlabel("cards out of the shoe before the hand (burn included)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"{result['rules']['decks']} decks, {result['shoes']:,} shoes: where the exact EV turns positive"
    )
    plotting.save(fig, path)


OUTPUT_NAMES = ("counting.json", "counting.txt", "depth.png")
"""The files ``--out`` receives (a reused ``--out`` folder may hold only these)."""


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """``counting.json``, the text report ``counting.txt`` and the plot ``depth.png`` under ``folder``."""
    (folder / "counting.json").write_text(strict_json.dumps(result, indent=1))
    (folder / "counting.txt").write_text(report(result) + "\n")
    plot_depth(result, folder / "depth.png")
    return [folder / n for n in OUTPUT_NAMES]


def _record_depth_bins(result: dict, config: CountingConfig) -> dict:
    result["depth_bin_cards"] = config.depth_bin_cards
    return result


main = study.command(
    "counting", CountingConfig, OUTPUT_NAMES, run, write_outputs, report, complete=_record_depth_bins
)
"""``pb-gym experiment counting CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""


__all__ = [
    "CountingConfig",
    "ConfigError",
    "main",
    "run",
    "studied_evs",
    "studied_rules",
    "deal_shoes",
    "shoe_sums",
    "deal_chunk",
    "merge",
    "ratio_ci",
    "correlation",
    "report",
    "plot_depth",
    "write_outputs",
    "STUDIED",
]
