"""The ``pb-gym odds`` and ``pb-gym simulate`` commands: the exact odds of a shoe (with known cards)
and a quick simulation beside them. Like :mod:`pb_gym.experiments.cli`, this module imports only the
standard library when it is loaded; numpy and the core are imported inside the commands."""

from __future__ import annotations

import argparse
import sys

from pb_gym.experiments.cli.parsing import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy and ruff know the name)
if TYPE_CHECKING:  # for the annotations only; the modules are imported where they are used
    from collections.abc import Sequence

    import numpy as np

    from pb_gym import rules as R


def add_rules_options(parser: argparse.ArgumentParser) -> None:
    from pb_gym import rules as R

    parser.add_argument(
        "--variant",
        default="standard",
        choices=R.BANKER_VARIANTS,
        help="banker payout: standard 19:20 (5%% commission), no-commission (a banker "
        "win with 6 pays 1:2) or ez (a banker win with a three-card 7 pushes)",
    )
    parser.add_argument(
        "--tie-pays", type=int, default=8, choices=R.TIE_PAYOUTS, help="tie payout x:1 (default 8)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def rules_of(args: argparse.Namespace, decks: int) -> R.Rules:
    """The rules that ``--variant`` and ``--tie-pays`` (:func:`add_rules_options`) and ``decks`` give,
    a bad value a :class:`UsageError` naming its option."""
    from pb_gym import rules as R

    try:
        return R.Rules(decks=decks, banker_variant=args.variant, tie_pays=args.tie_pays)
    except ValueError as error:
        raise UsageError(str(error).replace("Rules.", "--").replace("_", "-")) from None


MAX_RANK_COUNT = 10**9
"""Largest count of one rank ``--ranks`` takes (a billion cards: far beyond any shoe)."""


def _parse_ranks(text: str) -> np.ndarray:
    import numpy as np

    from pb_gym import rules as R

    parts = [p.strip() for p in text.split(",")]
    shown = text if len(text) <= 80 else text[:80] + "..."
    # ASCII digits only: str.isdigit() also accepts '²' or '٣', which int() then rejects or reads
    if len(parts) != R.N_RANKS or not all(p.isascii() and p.isdigit() for p in parts):
        raise UsageError(
            f"--ranks takes 13 comma-separated counts of cards remaining "
            f"({','.join(R.RANKS)}), each a whole number >= 0 in ASCII digits; got "
            f"{shown!r}"
        )
    if any(len(p.lstrip("0")) > 10 or int(p) > MAX_RANK_COUNT for p in parts):
        raise UsageError(f"--ranks: each count must be at most {MAX_RANK_COUNT:,}; got {shown!r}")
    return np.array([int(p) for p in parts], dtype=np.int64)


def _pct(x: float) -> str:
    return f"{100 * x:+.4f}%"


# ------------------------------------------------------------------------------------------ odds
def _parse_bets(text: str | None, rules) -> tuple[str, ...]:
    """``--bets``: comma-separated catalog names, or ``all`` (the default: the whole catalog)."""
    from pb_gym import catalog

    names = catalog.bet_names(rules)
    if text is None or text.strip() == "all":
        return names
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    for name in chosen:
        if name not in names:
            raise UsageError(
                f"--bets: unknown bet {name!r}; allowed: all, or comma-separated names from "
                f"{', '.join(names)}"
            )
    if not chosen:
        raise UsageError(
            f"--bets: no bet named; allowed: all, or comma-separated names from {', '.join(names)}"
        )
    return tuple(dict.fromkeys(chosen))


def _pays_text(bet) -> str:
    """A bet's winning pays, e.g. ``0.95:1`` or ``30/10/6/4/2/1:1``."""
    pays = [row.pays for row in bet.rows if row.pays > 0]
    return "/".join(f"{p:g}" for p in sorted(set(pays), reverse=True)) + ":1" if pays else "-"


def cmd_odds(args: argparse.Namespace) -> dict:
    """Exact probabilities and EV of every bet of the catalog for a full shoe or a given composition."""
    from pb_gym import catalog, exact, suited
    from pb_gym import rules as R

    if args.ranks is not None:
        composition = _parse_ranks(args.ranks)
        rules = rules_of(args, decks=8)  # only the payouts matter for a given composition
    else:
        rules = rules_of(args, decks=8 if args.decks is None else args.decks)
        composition = R.full_shoe(rules.decks)
    names = _parse_bets(args.bets, rules)
    suited_bets = {name for name in names if catalog.get_bet(name, rules).suited}
    if suited_bets and (args.ranks is not None or args.known is not None):
        if args.bets is not None and args.bets.strip() != "all":  # named: they need the suits
            raise UsageError(
                f"--bets: {', '.join(sorted(suited_bets))} are settled on suits: priced for a full shoe "
                "(--decks), not for a composition by rank (--ranks) or known ranks (--known)"
            )
        names = tuple(name for name in names if name not in suited_bets)  # all: those by rank
    try:
        result = exact.odds(composition, rules)
    except ValueError as error:
        raise UsageError(f"--ranks: {error}") from None
    if args.known is not None:
        return _odds_known(args, composition, rules, names, result)
    side = [name for name in names if name not in R.BETS]  # the seven spots are priced already
    side_ev = {}
    if side:  # a full shoe's suits are known: decks of each card (the suited bets are priced on them)
        priced = suited.suited_shoe(rules.decks) if suited_bets else composition
        side_ev = dict(zip(side, catalog.expected_values(priced, side, rules), strict=True))
    result["ev"] = {
        name: float(result["ev"][name]) if name in R.BETS else float(side_ev[name]) for name in names
    }
    result["rules"] = {
        "decks": None if args.ranks is not None else rules.decks,
        "variant": rules.banker_variant,
        "tie_pays": rules.tie_pays,
    }
    if not args.json:
        source = f"composition {args.ranks}" if args.ranks is not None else f"{rules.decks}-deck shoe"
        p = result["probabilities"]
        print(
            f"Exact odds of the next hand, {source} ({result['cards']} cards), "
            f"banker {rules.banker_variant}, tie {rules.tie_pays}:1"
        )
        print(
            f"  P(banker) = {p['banker']:.6f}   P(player) = {p['player']:.6f}   "
            f"P(tie) = {p['tie']:.6f}   P(pair) = {p['pair']:.6f}"
        )
        print(f"  {'bet':<22} {'pays':>16} {'EV per unit':>12}")
        bets = catalog.catalog(rules)
        for bet, ev in result["ev"].items():
            pays = (
                {"no-commission": "1:1*", "ez": "1:1*"}.get(rules.banker_variant, "")
                if bet == "banker"
                else ""
            )
            print(f"  {bet:<22} {pays or _pays_text(bets[bet]):>16} {_pct(ev):>12}")
        print(
            "  (negative EV = house edge; ties push banker and player bets; the paytables and their "
            "sources: pb_gym/catalog.py)"
        )
    return result


def _odds_known(
    args: argparse.Namespace, composition: np.ndarray, rules: R.Rules, names: Sequence[str], result: dict
) -> dict:
    """``odds --known``: the EVs of ``names`` given the cards at dealing positions 1-6."""
    import numpy as np

    from pb_gym import catalog, known_cards
    from pb_gym import rules as R

    # --known may be given several times (its values add up: a position given twice is refused)
    given = args.known if isinstance(args.known, str) else ",".join(args.known)
    try:
        known = known_cards.parse_known(given)
        law = known_cards.hand_class_probabilities(composition, known)
    except ValueError as error:
        text = str(error).removeprefix("known: ")  # (the core's name of the argument: said once)
        raise UsageError(text if text.startswith("--known") else f"--known: {text}") from None
    ev = law @ catalog.pay_matrix(names, rules)
    pt, bt = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))[:2]
    result["probabilities"] = {
        "banker": float(law[bt > pt].sum()),
        "player": float(law[pt > bt].sum()),
        "tie": float(law[pt == bt].sum()),
    }
    result["known"] = {str(p): [known_cards.RANK_LETTERS[r] for r in ranks] for p, ranks in known.items()}
    result["known_probability"] = float(known_cards.known_probability(composition, known))
    result["ev"] = {name: float(x) for name, x in zip(names, ev, strict=True)}
    result["rules"] = {
        "decks": None if args.ranks is not None else rules.decks,
        "variant": rules.banker_variant,
        "tie_pays": rules.tie_pays,
    }
    if not args.json:
        shown = ",".join(f"{p}={''.join(r)}" for p, r in result["known"].items())
        p = result["probabilities"]
        print(
            f"Exact odds of the next hand given {shown} (positions 1-6: player, banker, player, banker, "
            f"then the next two cards; P(these cards) = {result['known_probability']:.6f}), "
            f"{result['cards']} cards"
        )
        print(f"  P(banker) = {p['banker']:.6f}   P(player) = {p['player']:.6f}   P(tie) = {p['tie']:.6f}")
        print(f"  {'bet':<22} {'EV per unit':>12}")
        for bet, x in result["ev"].items():
            print(f"  {bet:<22} {_pct(x):>12}")
    return result


# -------------------------------------------------------------------------------------- simulate
def cmd_simulate(args: argparse.Namespace) -> dict:
    """Deal hands with the engine; observed frequencies and returns against the exact figures."""
    from pb_gym import engine, memory
    from pb_gym import rules as R
    from pb_gym.progress import Progress
    from pb_gym.simulate import simulate

    if args.hands < 1:
        raise UsageError(f"--hands={args.hands} is not allowed; allowed: an integer >= 1")
    if args.tables is not None and args.tables < 1:
        raise UsageError(f"--tables={args.tables} is not allowed; allowed: an integer >= 1")
    if args.seed < 0:
        raise UsageError(f"--seed={args.seed} is not allowed; allowed: an integer >= 0")
    rules = rules_of(args, args.decks)
    tables = args.tables or min(args.hands, 4096)
    try:  # the state, one hand's results and the payoffs of every table, before allocating them
        memory.require(
            tables * (engine.table_bytes(rules) + 3 * R.N_BETS * 8),
            f"simulate --tables {tables:,}",
            "use fewer --tables (the tables dealt at once; --hands are dealt in rounds over them)",
        )
    except memory.TooLarge as error:
        raise UsageError(str(error)) from None
    # a bar on a terminal for long runs; elsewhere a line every few seconds once a run takes that long
    terminal = sys.stderr.isatty()
    with Progress(
        "simulate",
        total=args.hands,
        bar=terminal,
        enabled=not args.json and (args.hands >= 1_000_000 or not terminal),
    ) as bar:
        result = simulate(rules, args.hands, args.seed, tables, bar.update)
    if not args.json:
        n = result["hands"]
        print(f"{n:,} hands, {rules.decks} decks, {result['tables']} tables, seed {args.seed}")
        print(f"  {'winner':<8} {'hands':>12} {'observed':>10} {'exact':>10}")
        for name in R.WINNERS:
            print(
                f"  {name:<8} {result['wins'][name]:>12,} {result['frequencies'][name]:>10.6f} "
                f"{result['exact_probabilities'][name]:>10.6f}"
            )
        print(f"  {'bet':<12} {'return/unit':>12} {'95% CI':>23} {'exact EV':>10}")
        for bet, row in result["bets"].items():
            lo, hi = row["ci95"]
            flag = "" if row["exact_within_ci"] else "  <- exact EV outside the CI"
            print(
                f"  {bet:<12} {_pct(row['return_per_unit']):>12} [{_pct(lo)}, {_pct(hi)}] "
                f"{_pct(row['exact_ev']):>10}{flag}"
            )
    return result


# ----------------------------------------------------------------------------------------- bench


__all__ = ["UsageError", "add_rules_options", "cmd_odds", "cmd_simulate"]
