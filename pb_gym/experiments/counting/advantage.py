"""The advantage player's report: what a count earns and risks, in the units card counters use.

Counting tools for blackjack (CVData, CVCX, Schlesinger's *Blackjack Attack*) report a count by these
figures; this module computes them for a baccarat count from its per-bet figures:

* win rate and SD per hand bet (``mean``, ``sd`` of one bet's net win in units of the stake) and per
  100 hands dealt (a count bets on a fraction ``frequency`` of the hands);
* EV and SD per hour at ``hands_per_hour`` (mini-baccarat and live tables deal about 70-80);
* DI, the desirability index: 1000 x win rate / SD, per hand dealt;
* N0 = variance / EV^2: the hands to be one SD ahead;
* SCORE: the win per 100 hands at the bet size where the bankroll of 10,000 units gives a 13.5%
  (e^-2) risk of ruin; with the diffusion formula below it is DI^2;
* risk of ruin for a bankroll: the diffusion formula exp(-2 EV B / var) (no goal, no time limit), and,
  because 40:1 and 200:1 tails break the normal approximation, a simulated double barrier (a goal and a
  hand limit) with 95% CIs (:func:`double_barrier`); the same barrier for the normal model
  (:func:`diffusion_barrier`, a closed-form series) and for independent two-outcome bets
  (:func:`walk_barrier`, exact), so that the tail's and the shoe's parts of a risk of ruin can be told
  apart (:func:`barrier_models`); the barriers are computed in
  :mod:`pb_gym.experiments.counting.barriers`.

Jacobson's published desirability index for his side-bet counts is reproduced by
:func:`jacobson_di`: it divides the win per hand dealt by the SD of the bet *off the top of the shoe*
(the full shoe's win probability) over the hands bet, not by the SD of the bets the count makes.

The counting studies (:mod:`pb_gym.experiments.counting`, :mod:`pb_gym.experiments.atlas`) give every count
and
every perfect-information bettor these figures from their per-shoe sums (:func:`bettor_report`), with
a double barrier over whole shoes (:func:`shoe_barrier`: sessions of ``session_shoes`` shoes drawn from
the dealt ones, so the hands of a shoe keep their correlation). :func:`replay_count` deals a count
given as tags (balanced or not, any starting count, a running or a true count) without the exact
calculator; :data:`HOW_DRAGON7` is Stephen How's published Dragon 7 count, replayed that way.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from pydantic import Field

from pb_gym import engine, exact
from pb_gym import rules as R
from pb_gym.ci import Z95
from pb_gym.experiments.common.yaml_config import Strict
from pb_gym.experiments.counting import counts
from pb_gym.experiments.counting.barriers import (  # noqa: F401  (every barrier of the report, named here too)
    diffusion_barrier,
    double_barrier,
    shoe_barrier,
    shoe_barriers,
    shoe_extremes,
    two_outcome_bet,
    walk_barrier,
)

HANDS_PER_HOUR = 75
"""Hands dealt per hour at a mini-baccarat or live table (about 70-80)."""
SCORE_RUIN = math.exp(-2.0)
"""The risk of ruin (13.5%) at which SCORE is defined."""
SCORE_BANKROLL = 10_000.0
"""The bankroll (units) to which SCORE is scaled."""


class RiskConfig(Strict):
    """The advantage player's figures of a counting study (the ``advantage:`` section)."""

    bankroll: float = Field(500.0, gt=0, description="bankroll for the risk of ruin, in units of one bet")
    goal: float = Field(
        1000.0, gt=0, description="the double barrier's goal: stop once this many units ahead"
    )
    session_shoes: int = Field(500, ge=1, le=100_000, description="the double barrier's time limit, in shoes")
    hands_per_hour: float = Field(
        HANDS_PER_HOUR, gt=0, description="hands dealt per hour (EV and SD per hour)"
    )
    sessions: int = Field(
        10_000,
        ge=100,
        le=1_000_000,
        description="sessions simulated for the double barrier (resampled shoes)",
    )
    seed: int = Field(0, ge=0, description="seed of the sessions' shoe draws")


def figures(mean: float, sd: float, frequency: float, hands_per_hour: float = HANDS_PER_HOUR) -> dict:
    """The advantage player's figures of a count that bets one unit on a fraction of the hands.

    Args:
        mean: the mean net win of one bet the count makes (units per unit staked).
        sd: the SD of one bet's net win.
        frequency: the share of the hands dealt that the count bets on (0..1].
        hands_per_hour: hands dealt per hour.

    Returns:
        ``win_rate_per_bet``, ``sd_per_bet``, ``win_per_100_dealt``, ``sd_per_100_dealt``,
        ``ev_per_hour``, ``sd_per_hour``, ``di``, ``n0`` (hands dealt), ``score``.
    """
    if not 0.0 < frequency <= 1.0:
        raise ValueError(f"frequency={frequency!r} is not allowed; allowed: a share in (0, 1]")
    if not sd > 0:
        raise ValueError(f"sd={sd!r} is not allowed; allowed: a number > 0")
    if not hands_per_hour > 0:
        raise ValueError(f"hands_per_hour={hands_per_hour!r} is not allowed; allowed: a number > 0")
    ev = frequency * mean  # per hand dealt
    variance = frequency * (sd * sd + mean * mean) - ev * ev
    sd_dealt = math.sqrt(variance)
    return {
        "win_rate_per_bet": mean,
        "sd_per_bet": sd,
        "win_per_100_dealt": 100.0 * ev,
        "sd_per_100_dealt": 10.0 * sd_dealt,
        "ev_per_hour": hands_per_hour * ev,
        "sd_per_hour": math.sqrt(hands_per_hour) * sd_dealt,
        "di": 1000.0 * ev / sd_dealt,
        "n0": variance / (ev * ev) if ev != 0 else math.inf,
        "score": score(ev, variance),
    }


def score(ev: float, variance: float) -> float:
    """SCORE: win per 100 hands when the bet is sized so that :data:`SCORE_BANKROLL` units carry a
    :data:`SCORE_RUIN` risk of ruin by the diffusion formula (0 for a count that does not win)."""
    if ev <= 0:
        return 0.0
    # exp(-2 k ev B / (k^2 var)) = SCORE_RUIN  ->  k = 2 ev B / (var (-ln SCORE_RUIN))
    k = 2.0 * ev * SCORE_BANKROLL / (variance * -math.log(SCORE_RUIN))
    return 100.0 * k * ev


def risk_of_ruin(bankroll: float, ev: float, variance: float) -> float:
    """The diffusion (normal) risk of ever losing ``bankroll`` units: exp(-2 ev B / var); 1 when the
    count does not win."""
    if ev <= 0:
        return 1.0
    return math.exp(-2.0 * ev * bankroll / variance)


def jacobson_di(frequency: float, win_per_100_dealt: float, house_edge: float, pays: float) -> float:
    """Jacobson's desirability index of a side-bet count, as he computes it: the win per hand dealt
    over the SD per hand dealt of a bet placed on ``frequency`` of the hands at the *full shoe's*
    odds (win ``pays``:1 with probability (1 - house_edge) / (pays + 1), else lose 1)."""
    p = (1.0 - house_edge) / (pays + 1.0)
    second_moment = p * pays * pays + (1.0 - p)
    return 1000.0 * (win_per_100_dealt / 100.0) / math.sqrt(frequency * second_moment)


def count_di(frequency: float, win_per_100_dealt: float, pays: float) -> float:
    """The desirability index from the count's own bets: the same bet at the count's average edge
    (win per bet = win per 100 dealt / (100 x frequency)), a two-outcome bet paying ``pays``:1."""
    mean = win_per_100_dealt / (100.0 * frequency)
    p = (1.0 + mean) / (pays + 1.0)
    sd = math.sqrt(p * pays * pays + (1.0 - p) - mean * mean)
    return figures(mean, sd, frequency)["di"]


# --------------------------------------------------------------------------------------------------
# Per-shoe sums -> the report of one bettor (a count or the perfect-information bettor of one bet)
# --------------------------------------------------------------------------------------------------
def _shifted(
    net: np.ndarray, low: np.ndarray, high: np.ndarray, bets: np.ndarray, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shoes with their mean net moved by ``delta``, spread over each shoe's bets."""
    per_bet = delta * bets / max(float(bets.mean()), 1e-300)
    return net + per_bet, low + np.minimum(per_bet, 0.0), high + np.maximum(per_bet, 0.0)


def barrier_with_ci(
    net: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    bets: np.ndarray,
    ev: np.ndarray,
    risk: RiskConfig,
    stake: float = 1.0,
) -> dict:
    """:func:`shoe_barrier` of the dealt shoes, recentred on the exact EV: each shoe's dealt path keeps
    its swings, and the shoes' mean net is moved from the dealt one to the mean exact EV ``ev`` of the
    hands bet (the dealt outcomes' noise around it has mean zero, and is far larger). Each figure has a
    95% CI that carries both sources of error: the exact win rate's 95% CI over shoes (the barrier run
    again at each end of it, on the same draws) widened by the simulation's half-width there."""
    n = len(net)
    se = float(np.std(ev, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    shift = float(np.mean(ev) - np.mean(net))

    # the centre and both ends of the win rate's CI, over the same draws
    shifts = [shift] + [shift + d * Z95 * se for d in (-1, 1)]
    centre, *ends = shoe_barriers(
        [_shifted(net, low, high, bets, delta) for delta in shifts],
        risk.bankroll,
        risk.goal,
        risk.session_shoes,
        risk.sessions,
        risk.seed,
        stake,
    )
    out = dict(centre)
    for key in ("p_ruin", "p_goal", "p_behind", "mean_win"):
        lo = min(e[f"{key}_ci95"][0] for e in ends + [centre])
        hi = max(e[f"{key}_ci95"][1] for e in ends + [centre])
        out[f"{key}_ci95"] = [max(lo, 0.0), min(hi, 1.0)] if key != "mean_win" else [lo, hi]
    out.update(
        {
            "bankroll": risk.bankroll,
            "goal": risk.goal,
            "session_shoes": risk.session_shoes,
            "sessions": risk.sessions,
            "shoes_resampled": n,
        }
    )
    return out


def bettor_report(
    hands: np.ndarray,
    bets: np.ndarray,
    ev: np.ndarray,
    payoff: np.ndarray,
    payoff_sq: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    risk: RiskConfig,
    barrier: bool = True,
) -> dict:
    """The advantage player's figures of a one-unit bettor, from per-shoe sums (one row per shoe):
    hands dealt, hands bet, exact EV, dealt payoff and its square on the hands bet, and the running
    win's extremes (:func:`shoe_extremes`).

    The win rate per hand bet is the exact EV (the estimate with the least noise); its SD is the dealt
    payoffs' (second moment minus the square of their mean). Then :func:`figures` (win and SD per hand
    bet, per 100 hands dealt and per hour; DI, N0, SCORE), the diffusion risk of ruin at
    ``risk.bankroll`` and, with ``barrier``, the double barrier over shoes (:func:`barrier_with_ci`)
    and the same barrier for the normal model and for independent bets (:func:`barrier_models`).
    """
    n_bets, n_hands, shoes = float(bets.sum()), float(hands.sum()), len(hands)
    if n_bets <= 0:
        return {"note": "never bets"}
    mean = float(ev.sum()) / n_bets
    realized = float(payoff.sum()) / n_bets
    sd = math.sqrt(max(float(payoff_sq.sum()) / n_bets - realized * realized, 0.0))
    if sd <= 0:
        return {"note": "every hand bet paid the same: no SD"}
    out = figures(mean, sd, n_bets / n_hands, risk.hands_per_hour)
    per_hand_ev = out["win_per_100_dealt"] / 100.0
    variance = (out["sd_per_100_dealt"] / 10.0) ** 2
    out.update(
        {
            "realized_win_rate_per_bet": realized,
            "bets_per_shoe": n_bets / shoes,
            "win_per_shoe": float(ev.sum()) / shoes,
            "realized_win_per_shoe": float(payoff.sum()) / shoes,
            "risk_of_ruin_formula": risk_of_ruin(risk.bankroll, per_hand_ev, variance),
        }
    )
    if barrier:
        out["double_barrier"] = barrier_with_ci(payoff, low, high, bets, ev, risk)
        out["barrier_models"] = barrier_models(mean, sd, n_bets / shoes, risk)
    return out


def barrier_models(
    mean: float, sd: float, bets_per_shoe: float, risk: RiskConfig, stake: float = 1.0
) -> dict:
    """The double barrier of ``risk`` (bankroll, goal, ``session_shoes``) for two models of the bets,
    beside the resampled shoes of :func:`barrier_with_ci`: over ``bets`` = ``bets_per_shoe`` x
    ``session_shoes`` bets (rounded) of this ``mean`` and ``sd`` (per bet), the ``normal`` one (a
    diffusion of the same drift and variance, :func:`diffusion_barrier`) and the ``walk`` of
    independent bets (the two-outcome bet of the same mean and SD, :func:`two_outcome_bet`: ``win``
    units with probability ``p_win``, else -1; :func:`walk_barrier`, exact). The normal model has no
    tail, the walk has the bet's tail but no shoe: bets independent, as many in every session."""
    bets = max(1, round(bets_per_shoe * risk.session_shoes))
    if risk.bankroll <= stake:
        return {"bets": bets, "note": f"a bankroll of {risk.bankroll:g} does not cover one bet"}
    win, p_win = two_outcome_bet(mean, sd)
    return {
        "bets": bets,
        "normal": diffusion_barrier(mean, sd * sd, risk.bankroll, risk.goal, bets, stake),
        "walk": {
            "win": win,
            "p_win": p_win,
            **walk_barrier(win, p_win, risk.bankroll, risk.goal, bets, stake),
        },
    }


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.{digits}f}"


def _model_cells(models: dict | None) -> list[str]:
    """The ruin % of :func:`barrier_models`' two models (``n/a`` without them)."""
    if not models or "note" in models:
        return ["n/a", "n/a"]
    return [
        _pct(models["normal"]["p_ruin"]),
        f"{_pct(models['walk']['p_ruin'])} ({models['walk']['win']:.1f}:1)",
    ]


def advantage_table(rows: list[tuple[str, dict]], risk: dict) -> str:
    """The advantage player's figures of several bettors (``(name, bettor_report(...))`` pairs) as a
    Markdown table; ``risk`` is the :class:`RiskConfig` the reports were computed with (as a dict)."""
    barrier = f"{risk['bankroll']:g} units, goal +{risk['goal']:g}, {risk['session_shoes']} shoes"
    lines = [
        "| bettor | hands bet % | win/bet % | SD/bet | units/100 hands | SD/100 hands | "
        f"units/hour ({risk['hands_per_hour']:g} hands) | DI | SCORE | N0 (hands) | units/shoe | "
        f"risk of ruin, formula ({risk['bankroll']:g} units) % | ruin % ({barrier}) | goal % | "
        "behind % | mean win (units) | ruin %, same barrier: normal model | ruin %, same barrier: "
        "independent bets |",
        "|---|" + "---|" * 17,
    ]
    for name, a in rows:
        if "note" in a:
            lines.append(f"| {name} | " + " | ".join([a["note"]] + [""] * 16) + " |")
            continue
        freq = a["win_per_100_dealt"] / 100.0 / a["win_rate_per_bet"] if a["win_rate_per_bet"] else math.nan
        b = a.get("double_barrier")

        def ci(key: str, factor: float = 100.0, digits: int = 1, b: dict | None = b) -> str:
            if b is None:
                return "n/a"
            lo, hi = b[f"{key}_ci95"]
            return f"{factor * b[key]:.{digits}f} [{factor * lo:.{digits}f}, {factor * hi:.{digits}f}]"

        cells = [
            _pct(freq, 2),
            f"{100 * a['win_rate_per_bet']:+.2f}",
            f"{a['sd_per_bet']:.2f}",
            f"{a['win_per_100_dealt']:+.3f}",
            f"{a['sd_per_100_dealt']:.1f}",
            f"{a['ev_per_hour']:+.3f}",
            f"{a['di']:.2f}",
            f"{a['score']:.2f}",
            f"{a['n0']:,.0f}" if math.isfinite(a["n0"]) else "inf",
            f"{a['win_per_shoe']:+.3f}",
            _pct(a["risk_of_ruin_formula"]),
            ci("p_ruin"),
            ci("p_goal"),
            ci("p_behind"),
            ci("mean_win", 1.0, 0),
            *_model_cells(a.get("barrier_models")),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# A count replayed on dealt shoes (no exact calculator): tags, a starting count, running or true
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CountSpec:
    """A count as a player keeps it.

    ``tags`` for A, 2, ..., 9 and the ten-value cards
    (:func:`pb_gym.experiments.counting.counts.tags_by_rank`); the
    count starts at ``start``; it is the running count (``true=False``) or the running count per
    deck unseen (``true=True``; ``start`` is then added after the division); the player bets one unit
    on ``bet`` (a column of :data:`pb_gym.rules.BETS`) when the count is at least ``trigger``.
    """

    tags: tuple[float, ...]
    trigger: float
    bet: str
    start: float = 0.0
    true: bool = True

    def value(self, unseen: np.ndarray, decks: int) -> np.ndarray:
        """The count before the next hand for compositions ``unseen`` ``(n, 13)``."""
        unseen = np.asarray(unseen, dtype=np.float64)
        seen = (R.full_shoe(decks)[None, :] - unseen) @ counts.tags_by_rank(self.tags)
        if self.true:
            seen = seen / (unseen.sum(axis=1) / R.CARDS_PER_DECK)
        return self.start + seen


def replay_count(
    rules: R.Rules, count: CountSpec, shoes: int, seed: int | np.random.SeedSequence
) -> dict[str, np.ndarray]:
    """Deal the first shoe of ``shoes`` tables and play ``count``: per-shoe ``hands``, ``bets``, ``ev``
    (the exact EV of the hands bet, :func:`pb_gym.exact.expected_values`), ``payoff`` and ``payoff_sq``
    (the dealt net win and its square on the hands bet), ``low`` and ``high`` (the running win's
    extremes): the sums :func:`bettor_report` reads."""
    if count.bet not in R.BETS:
        raise ValueError(f"bet={count.bet!r} is not allowed; allowed: {', '.join(R.BETS)}")
    column = R.BETS.index(count.bet)
    state = engine.init(rules, shoes, seed=seed)
    hand = engine.HandResult.empty(shoes)
    out = {k: np.zeros(shoes) for k in ("hands", "bets", "ev", "payoff", "payoff_sq", "low", "high")}
    running = np.zeros(shoes)
    while True:
        live = counts.live_tables(rules, state)
        if not live.any():
            return out
        tables = np.flatnonzero(live)
        unseen = state.unseen[tables]
        bet = count.value(unseen, rules.decks) >= count.trigger
        if bet.any():
            out["ev"][tables[bet]] += exact.expected_values(unseen[bet].astype(np.int64), rules)[:, column]
        engine.deal(rules, state, hand)
        win = np.where(bet, hand.payoffs(rules)[tables, column], 0.0)
        out["hands"][tables] += 1
        out["bets"][tables] += bet
        out["payoff"][tables] += win
        out["payoff_sq"][tables] += win * win
        running[tables] += win
        out["low"][tables] = np.minimum(out["low"][tables], running[tables])
        out["high"][tables] = np.maximum(out["high"][tables], running[tables])


HOW_DRAGON7 = {
    "source": "Stephen How, 'Unbalanced Dragon 7 Count', discountgambling.net, October 2012",
    "count": CountSpec(
        tags=(1, 0, 0, -1, -1, -1, -1, 2, 2, 0), trigger=0.0, bet="dragon7", start=-32.0, true=False
    ),
    "conditions": "8 decks, cut card 16 cards from the end; EZ Baccarat's Dragon 7 (40:1)",
    "rules": {"decks": 8, "cut_card": 16, "burn": True, "hand_after_cut": False},
    "risk": {"bankroll": 500.0, "goal": 1000.0, "session_shoes": 500},
    "win_per_shoe": 0.52,
    "bets_per_shoe": 6.8,
    "p_ruin": 0.035,
    "p_behind": 0.24,
    "mean_win": 250.0,
}
"""Stephen How's unbalanced Dragon 7 count (A +1; 4, 5, 6, 7 -1; 8, 9 +2; the rest 0; start at -32,
bet when the running count is at least 0) and the figures he publishes for it."""
