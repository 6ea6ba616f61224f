"""The published count figures the atlas (:mod:`pb_gym.experiments.atlas`) puts beside its own, with their
sources, and the comparison of each figure with ours (inside our 95% CI or not)."""

from __future__ import annotations

import dataclasses

from pb_gym.experiments.counting.advantage import jacobson_di


# --------------------------------------------------------------------------------------------------
# Published counts (8 decks, cut card 14, standard burn), kept here with their sources
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Published:
    """A count figure from the advantage-play literature, for one bet.

    ``tags`` are given for A, 2, ..., 9, ten-value (the ten-value tag applies to 10, J, Q, K);
    ``trigger``: bet when the true count (running count / decks unseen) is at least this.
    Fractions (not %) for ``bet_frequency`` and ``average_edge``; units of one stake for the rest;
    ``desirability_index`` as the author computes it
    (:func:`pb_gym.experiments.counting.advantage.jacobson_di`).
    """

    bet: str
    source: str
    pays: str
    house_edge: float | None = None
    tags: tuple[int, ...] | None = None
    trigger: float | None = None
    bet_frequency: float | None = None
    average_edge: float | None = None
    units_per_100_hands: float | None = None
    units_per_shoe: float | None = None
    desirability_index: float | None = None
    conditions: str = (
        "8 decks, cut card 14 cards from the end, standard burn, one more hand after the cut card"
    )


_JACOBSON_SIDE_BETS = (
    "Eliot Jacobson, 'Baccarat Side Bets', advancedadvantageplay.com/side-bets/"
    "baccarat-side-bets/ (8 decks, cut card at 14, standard burn and cut-card "
    "rules; simulations)"
)
PUBLISHED: tuple[Published, ...] = (
    Published(
        "three_giving_eight",
        _JACOBSON_SIDE_BETS,
        "200:1",
        house_edge=0.08682,
        tags=(1, 1, -3, 1, 1, 1, 1, -8, 1, 1),
        trigger=2,
        bet_frequency=0.23207,
        average_edge=0.16926,
        units_per_100_hands=3.928,
        desirability_index=6.03,
    ),
    Published(
        "eights_and_nines",
        _JACOBSON_SIDE_BETS,
        "20:1",
        house_edge=0.07372,
        tags=(1, 1, 0, 0, 0, 0, 0, -3, -3, 1),
        trigger=4,
        bet_frequency=0.1361,
        average_edge=0.0891,
        units_per_100_hands=1.213,
        desirability_index=7.62,
    ),
    Published(
        "nine_over_seven",
        _JACOBSON_SIDE_BETS,
        "50:1",
        house_edge=0.08103,
        tags=(0, 1, 1, 1, 1, 1, -5, 1, -5, 1),
        trigger=6,
        bet_frequency=0.1433,
        average_edge=0.1085,
        units_per_100_hands=1.56,
    ),
    Published(
        "bad_beat",
        _JACOBSON_SIDE_BETS,
        "50:1",
        house_edge=0.08459,
        tags=(0, 1, 1, 1, 1, 1, 1, -5, -5, 1),
        trigger=6,
        bet_frequency=0.1431,
        average_edge=0.1054,
        units_per_100_hands=1.51,
    ),
    Published(
        "big_tiger",
        "Eliot Jacobson, 'Card Counting the Big Tiger Baccarat Side Bet', "
        "advancedadvantageplay.com, July 2024 (100 million 8-deck shoes, cut card at 14)",
        "50:1",
        house_edge=0.152533,
        tags=(0, 0, -1, -1, -1, -2, 1, 2, 2, 0),
        trigger=8,
        bet_frequency=0.03536,
        average_edge=0.07227,
        units_per_100_hands=0.256,
    ),
    Published(
        "dragon_bonus_player",
        "Eliot Jacobson, 'Shoe-Shopping the Dragon Bonus Baccarat Side "
        "Bet', 888casino.com blog (his Dragon Bonus count: cut card at 14, normal burn)",
        "natural win 1:1, natural tie push, win by 9/8/7/6/5/4: 30/10/6/4/2/1",
        house_edge=0.026517,
        units_per_shoe=0.1231,
        units_per_100_hands=0.1515,
    ),
    Published(
        "dragon_bonus_player",
        "Stephen How, 'Player Dragon Bonus Tracking Sheet', "
        "discountgambling.net, October 2011 (running-count thresholds by hand, not a true "
        "count; shoe rules of his casino)",
        "natural win 1:1, natural tie push, win by 9/8/7/6/5/4: 30/10/6/4/2/1",
        units_per_shoe=0.112,
        bet_frequency=0.048,
        conditions="8 decks (his casino's cut card and burn; not stated)",
    ),
)
"""The published count figures the atlas puts beside its own (bets absent from the book are skipped)."""
PUBLISHED_RULES = {"decks": 8, "cut_card": 14, "burn": True, "hand_after_cut": True}
"""The conditions of the published simulations ("standard burn card and cut card rules": when the cut
card comes out, the hand is finished and one more is dealt); under other rules the figures are shown,
not judged. With ``hand_after_cut: false`` the replayed counts earn about 8% less than published (one
hand fewer per shoe, the deepest and most profitable one)."""


def _inside(value: float, entry: dict) -> bool | None:
    if entry["estimate"] is None:
        return None
    lo, hi = entry["ci95"]
    return bool(lo <= value <= hi)


def _desirability(published: Published, replay: dict, house_edge: float, comparable: bool) -> dict:
    """The published desirability index beside the replay's, computed the author's way
    (:func:`pb_gym.experiments.counting.advantage.jacobson_di`: the win per hand dealt over the full shoe's
    SD of the
    bet on the hands bet), its CI carried from the win rate's."""
    pays = float(published.pays.split(":")[0])
    frequency = replay["bet_frequency"]["estimate"]
    win = replay["units_per_100_hands"]
    if frequency is None or not frequency > 0 or win["estimate"] is None:
        return {"published": published.desirability_index, "ours": None, "ci95": None, "agrees": None}
    ours = jacobson_di(frequency, win["estimate"], house_edge, pays)
    ci = [jacobson_di(frequency, w, house_edge, pays) for w in win["ci95"]]
    return {
        "published": published.desirability_index,
        "ours": ours,
        "ci95": ci,
        "agrees": (
            bool(ci[0] <= published.desirability_index <= ci[1])
            if comparable and published.desirability_index is not None
            else None
        ),
    }


def compare_published(
    published: Published, replay: dict | None, ours: dict, house_edge: float, comparable: bool
) -> dict:
    """One published figure set beside ours, with a verdict per figure.

    ``replay``: the published count replayed on our shoes (None when no tags are published); ``ours``:
    our EoR count. A figure *agrees* when the published value lies inside our 95% CI (of the replay
    when there is one, else of our EoR count, which is at least as good as any linear count on
    average). Under rules other than the published conditions nothing is judged.
    """
    target = replay if replay is not None else ours
    rows = {}
    for key in ("bet_frequency", "average_edge", "units_per_100_hands", "units_per_shoe"):
        value = getattr(published, key)
        if value is None:
            continue
        entry = target[key]
        row = {
            "published": value,
            "ours": entry["estimate"],
            "ci95": entry["ci95"],
            "agrees": _inside(value, entry) if comparable else None,
        }
        if replay is None and key in ("bet_frequency", "average_edge"):
            row["agrees"] = None  # another count bets on other hands: only the gains compare
            row["note"] = "not comparable: the published count is not ours"
        elif (
            replay is None
            and comparable
            and not row["agrees"]
            and entry["estimate"] is not None
            and value < entry["ci95"][0]
        ):
            row["note"] = (
                "below ours: the published figure is of another count, and ours is fitted to the exact EVs"
            )
        rows[key] = row
    if published.desirability_index is not None and replay is not None:
        rows["desirability_index"] = _desirability(published, replay, house_edge, comparable)
    edge = None
    if published.house_edge is not None:
        edge = {
            "published": published.house_edge,
            "ours": house_edge,
            "agrees": abs(house_edge - published.house_edge) < 5e-5 + 1e-3 * published.house_edge,
        }
    return {
        "source": published.source,
        "conditions": published.conditions,
        "pays": published.pays,
        "compared_with": "the published count replayed on our shoes"
        if replay is not None
        else "our EoR count (no tags published)",
        "tags": None if published.tags is None else list(published.tags),
        "trigger": published.trigger,
        "house_edge": edge,
        "figures": rows,
        "judged": comparable,
    }


__all__ = ["PUBLISHED", "PUBLISHED_RULES", "Published", "compare_published"]
