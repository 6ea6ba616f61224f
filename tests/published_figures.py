"""The published exact figures the tests reproduce, read from ``tests/data/published_figures.json``
(each group there names its published source). One loader, shared by the test modules."""

import json

import repo_paths

DATA = json.loads((repo_paths.DATA / "published_figures.json").read_text())

MAIN_FIGURES: dict[int, tuple[float, ...]] = {
    int(decks): tuple(row) for decks, row in DATA["main_bets"]["by_decks"].items()
}
"""decks -> P(banker), P(player), P(tie), house edges in % of banker (5%), player, tie 8:1, tie 9:1."""

EIGHT_DECK_COUNTS: dict[str, int] = {k: v for k, v in DATA["eight_deck_counts"].items() if k != "source"}
"""8 decks, six-card deals: the total and the deals won by banker, player and tie."""

VARIANT_FIGURES: list[tuple[str, dict, float, float]] = [
    (bet, rules, edge8, edge6) for bet, rules, edge8, edge6, _ in DATA["variants_and_side_bets"]["rows"]
]
"""(bet, Rules keyword arguments, house edge in % with 8 decks, with 6 decks)."""


def edge8(bet: str, **rules) -> float:
    """The published 8-deck house edge in % of ``bet`` under ``rules`` (main bets or a variant row)."""
    main = dict(zip(DATA["main_bets"]["columns"], MAIN_FIGURES[8], strict=True))
    if not rules:
        key = {"banker": "edge_banker_5pct", "player": "edge_player", "tie": "edge_tie_8to1"}.get(bet)
        if key:
            return main[key]
    if bet == "tie" and rules == {"tie_pays": 9}:
        return main["edge_tie_9to1"]
    for row_bet, row_rules, edge, _ in VARIANT_FIGURES:
        if row_bet == bet and row_rules == rules:
            return edge
    raise KeyError(f"no published 8-deck figure for {bet} under {rules}")
