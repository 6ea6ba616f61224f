"""The ``pb-gym optimum`` command: the exact optimal play of a session (:mod:`pb_gym.session_optimum`).

From a bankroll, reach a goal within a number of hands, stakes in whole units between the table
minimum and maximum, bets from the catalog, hands dealt independently at the full shoe's exact
probabilities. The command prints the optimal probability of reaching the goal beside bold play and
timid play, the opening action and the optimal policy as runs of bankrolls per number of hands left.
Like :mod:`pb_gym.experiments.cli`, this module imports only the standard library when it is loaded;
numpy and the core are imported inside the command.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from decimal import Decimal, InvalidOperation

from pb_gym.experiments.cli.odds import add_rules_options, rules_of
from pb_gym.experiments.cli.parsing import UsageError, add_command

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy and ruff know the name)
if TYPE_CHECKING:  # for the annotations only; the modules are imported where they are used
    from pb_gym import session_optimum as so

OPTIONS = {
    "table_min": "--table-min",
    "table_max": "--table-max",
    "bankroll": "--bankroll",
    "goal": "--goal",
    "hands": "--hands",
    "bets": "--bets",
    "decks": "--decks",
}
"""The option of each :class:`pb_gym.session_optimum.Session` field (its errors name the field)."""
WIDTH = 96
"""The text report's width in columns."""
POLICY_ROWS = 4
"""Rows of the policy the text report prints before the last one (``--json`` prints them all)."""
AMOUNT_HELP = "allowed: a number of units, an integer or a decimal on the bankroll lattice (e.g. 10.5)"


def _amount(text: str) -> int | Decimal:
    """``--bankroll`` and ``--goal``: an int, or an exact decimal (the lattice is checked later)."""
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal("NaN")
    if not text.isascii() or not value.is_finite() or len(text) > 40:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; {AMOUNT_HELP}")
    return value


def _table_max(text: str) -> int | None:
    if text.lower() == "none":
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; allowed: none (no maximum) or a whole number of units >= --table-min"
        )
    return int(text)


def _whole(text: str) -> int:
    """An integer option (``--hands``, ``--table-min``, ``--decks``): its range is the session's check."""
    if not re.fullmatch(r"-?[0-9]{1,18}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; allowed: an integer")
    return int(text)


def add_parser(sub) -> None:
    """The ``optimum`` subcommand and its options."""
    parser = add_command(sub, cmd_optimum, "the exact optimal play of a session: reach a goal within H hands")
    parser.add_argument("--bankroll", type=_amount, required=True, help="the starting bankroll, in units")
    parser.add_argument(
        "--goal", type=_amount, required=True, help="the bankroll to reach, in units (above --bankroll)"
    )
    parser.add_argument("--hands", type=_whole, required=True, help="the most hands played, >= 1")
    parser.add_argument("--table-min", type=_whole, default=1, help="the smallest stake, units (default 1)")
    parser.add_argument(
        "--table-max",
        type=_table_max,
        default=None,
        help="the largest stake in whole units, or none (default: none; the bankroll caps the stake)",
    )
    parser.add_argument(
        "--bets",
        default="banker,player,tie",
        metavar="NAME,NAME,...",
        help="the bets offered, comma-separated catalog names (default banker,player,tie; the list: "
        "pb-gym odds)",
    )
    parser.add_argument("--decks", type=_whole, default=8, help="decks in the shoe, 1-8 (default 8)")
    parser.add_argument(
        "--states",
        default="reachable",
        choices=("reachable", "all"),
        help="the policy shown: at the states optimal play reaches (default), or at every bankroll",
    )
    add_rules_options(parser)  # --variant, --tie-pays, --json


def _option_error(error: ValueError, table_min: int) -> UsageError:
    """A session's error with its fields named as the command's options (``table_max`` ->
    ``--table-max``, ``None`` -> ``none``, ``Decimal('10.01')`` -> ``10.01``)."""
    text = re.sub(r"Decimal\('([^']*)'\)", r"\1", str(error))
    text = text.replace(">= table_min (got", f">= table_min ({table_min}) (got")
    text = text.replace("above the bankroll (", "above --bankroll (")
    text = text.replace("None (no maximum)", "none (no maximum)")
    field = re.match(r"(\w+)", text)
    if field and field[1] in OPTIONS:  # the field the message is about
        text = OPTIONS[field[1]] + text[len(field[1]) :]
    for name in ("table_min", "table_max"):
        text = text.replace(name, OPTIONS[name])
    text = text.replace(" or goal smaller", " or --goal smaller")
    return UsageError(text)


def _session(args: argparse.Namespace) -> so.Session:
    from pb_gym import session_optimum as so

    bets = tuple(part.strip() for part in args.bets.split(",") if part.strip())
    if not bets:
        raise UsageError(
            "--bets: no bet named; allowed: comma-separated catalog names (pb-gym odds lists them)"
        )
    rules = rules_of(args, args.decks)
    try:
        return so.Session(
            bankroll=args.bankroll,
            goal=args.goal,
            hands=args.hands,
            table_min=args.table_min,
            table_max=args.table_max,
            bets=bets,
            decks=args.decks,
            rules=rules,
        )
    except ValueError as error:
        raise _option_error(error, args.table_min) from None


def comparisons(session: so.Session) -> dict:
    """Bold play on player and on banker (those offered; else on the first bet) and timid play (flat
    table-minimum stakes on player, else on the first main bet offered), exact."""
    from pb_gym import session_optimum as so

    mains: list[str] = [bet for bet in ("player", "banker") if bet in session.bets] or [session.bets[0]]
    bold = {bet: so.evaluate(session, so.bold_play(session, bet)) for bet in mains}
    stake = int(session.table_min)
    timid = so.evaluate(session, so.timid_play(session, mains[0], stake))
    return {"bold_play": bold, "timid_play": {"bet": mains[0], "stake": stake, "p_goal": timid}}


def cmd_optimum(args: argparse.Namespace) -> dict:
    """The exact optimal play of a session (pb_gym.session_optimum): from --bankroll, reach --goal
    within --hands hands, staking whole units from --table-min to --table-max (and never above the
    bankroll) on one of --bets per hand, or sitting out; hands are dealt independently at the full
    shoe's exact probabilities. Amounts are in table units. Prints P(reach the goal) under optimal
    play beside bold play and timid play, the opening action and the optimal policy per number of
    hands left (--json: all of it as one object)."""
    session = _session(args)
    from pb_gym import session_optimum as so

    result = so.solve(session).to_json(states=args.states)
    result.update(comparisons(session))
    result["states"] = args.states
    if not args.json:
        print(report(result))
    return result


# --------------------------------------------------------------------------------------- the text
def _units(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.10g}"


def _action(bet: str | None, stake: int) -> str:
    return "sit out" if bet is None else f"{stake} on {bet}"


def _runs_text(runs: list[dict]) -> str:
    parts = []
    for run in runs:
        span = _units(run["from"]) + ("" if run["from"] == run["to"] else "-" + _units(run["to"]))
        parts.append(f"{span}: {_action(run['bet'], run['stake'])}")
    return "; ".join(parts)


def policy_lines(policy: dict, rows: int = POLICY_ROWS, width: int = WIDTH) -> list[str]:
    """The policy as text: consecutive numbers of hands left with the same runs share one row; the
    first ``rows`` rows and the last are printed, each wrapped at ``width`` columns."""
    groups: list[tuple[str, str, str]] = []  # (first hands left, last hands left, runs)
    for hands, runs in policy.items():
        text = _runs_text(runs)
        if groups and groups[-1][2] == text and int(groups[-1][1]) == int(hands) + 1:
            groups[-1] = (groups[-1][0], hands, text)
        else:
            groups.append((hands, hands, text))
    shown = groups if len(groups) <= rows + 1 else [*groups[:rows], groups[-1]]
    lines = []
    for i, (first, last, text) in enumerate(shown):
        if i == rows and len(groups) > rows + 1:
            hidden = groups[rows:-1]
            lines.append(
                f"  ... {len(hidden)} more row(s), {hidden[0][0]} to {hidden[-1][1]} hands left "
                "(--json prints every row)"
            )
        label = f"{first}" if first == last else f"{first}-{last}"
        lines += textwrap.wrap(
            text,
            width=width,
            initial_indent=f"  {label:>7} | ",
            subsequent_indent=" " * 12,
            break_on_hyphens=False,
        )
    return lines


def report(result: dict) -> str:
    """The text report of ``pb-gym optimum``."""
    s = result["session"]
    top = "no maximum" if s["table_max"] is None else f"maximum {s['table_max']}"
    lines = [
        f"Session: bankroll {_units(s['bankroll'])} -> goal {_units(s['goal'])} units within "
        f"{s['hands']} hands; whole-unit stakes, minimum {s['table_min']}, {top}",
        f"bets {', '.join(s['bets'])}; {s['decks']} decks; hands independent at the full shoe's exact odds",
        "",
        "P(reach the goal), exact:",
        f"  {'optimal play':<36} {result['p_goal']:.12f}",
    ]
    for bet, value in result["bold_play"].items():
        lines.append(f"  {'bold play on ' + bet:<36} {value:.12f}")
    timid = result["timid_play"]
    units = "1 unit" if timid["stake"] == 1 else f"{timid['stake']} units"
    label = f"timid play (flat {units} on {timid['bet']})"
    lines.append(f"  {label:<36} {timid['p_goal']:.12f}")
    start = result["start"]
    lines += [
        "",
        f"Start: {'sit out' if start is None else _action(start['bet'], start['stake'])}",
        "",
        f"Optimal policy{' at the states it reaches' if result['states'] == 'reachable' else ''} "
        "(hands left | bankrolls in units: action):",
        *policy_lines(result["policy"]),
    ]
    if result["states"] == "reachable":
        lines.append(
            "  (a range a-b covers the bankrolls from a to b that optimal play reaches; --states all)"
        )
    return "\n".join(lines)


__all__ = ["add_parser", "cmd_optimum", "comparisons", "policy_lines", "report"]
