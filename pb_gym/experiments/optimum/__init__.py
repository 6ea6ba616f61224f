"""The session-optimum study: the exact optimal play of a session beside bold play, timid play and every
classic progression, over a grid of goals, table maxima and hand limits.

``pb-gym experiment optimum CONFIG [--json] [--out DIR]``

For each cell of the grid (a goal, a table maximum, a hand limit; one starting bankroll and table
minimum) the session is the one :mod:`pb_gym.session_optimum` solves: reach the goal within the hand
limit, stakes in whole units between the table minimum and maximum and never above the bankroll,
hands dealt independently at the full shoe's exact probabilities. Per cell, all exact:

* the optimum (:func:`pb_gym.session_optimum.solve`) over the config's ``bets``, its opening action
  and the expected hands it plays on each bet;
* bold play on player and on banker and timid play (one table minimum on player every hand),
  valued by :func:`pb_gym.session_optimum.evaluate`;
* every system of ``systems`` (configs/systems/classic.yaml's) on each of ``system_bets``, valued by
  evaluate's exact chain (:func:`pb_gym.experiments.evaluate.exact_chain.exact_system`) on the same
  session (:func:`chain_config`), or the chain's reason where it is not finite.

The two calculations agree where their conventions do (``docs/guides/session-optimum.md``): the chain
stakes what a system asks, cut to the table maximum and then to the bankroll (all-in), and ends a
session at ruin (a bankroll below the table minimum) or at the goal (within 1e-9); the solver stakes
whole units only. On player (even money, whole bankrolls) every system's stakes are whole units, so
the optimum bounds each of them; on banker an all-in stake of a fractional bankroll is outside the
solver's actions (and takes the chain onto ever finer lattices: most progressions are then not
finite within ``max_states``).
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from pb_gym import session_optimum as so
from pb_gym.experiments.common import study
from pb_gym.experiments.common.yaml_config import RulesConfig, Strict, TableLimits
from pb_gym.experiments.evaluate import exact_chain
from pb_gym.experiments.evaluate.settings import AnySystem, StudyConfig

NO_MAXIMUM = 1e9
"""The table maximum given to evaluate's chain for a session without one: no stake reaches it (the
bankroll, below the goal, caps every stake first), so no system's progression is ever capped by it."""
IGNORE_BET = ("follow_winner", "chop")
"""System types whose ``bet`` key is not read (they bet the last winner, or against it): valued once."""
MAIN_BETS = ("player", "banker")
"""The bets of bold play, in the report's order."""


class OptimumConfig(Strict):
    """``configs/experiments/optimum.yaml``: the grid of sessions and what is compared on each."""

    bankroll: int = Field(10, ge=1, description="the starting bankroll, in units")
    table_min: int = Field(1, ge=1, description="the table minimum, in units (at most the bankroll)")
    goals: tuple[int, ...] = Field(
        (15, 20, 30, 50), min_length=1, description="the goals, in units (each above the bankroll)"
    )
    table_maxima: tuple[int | None, ...] = Field(
        (2, 5, 10, None),
        min_length=1,
        description="the table maxima, in units (each at least table_min); null: no maximum",
    )
    hands: tuple[int, ...] = Field((10, 30, 100), min_length=1, description="the hand limits (each >= 1)")
    bets: tuple[str, ...] = Field(
        ("banker", "player", "tie"), min_length=1, description="the bets the optimum may use (catalog names)"
    )
    rules: RulesConfig = Field(RulesConfig(), description="the rules of the game (decks, payouts)")
    systems: list[AnySystem] = Field(
        default_factory=list,
        description="the betting systems valued by evaluate's exact chain, each {type: ..., its keys} "
        "as in an evaluate config (their table, bankroll, goal and hands are the cell's)",
    )
    system_bets: tuple[Literal["player", "banker"], ...] = Field(
        ("player", "banker"),
        description="each system with a `bet` key is valued once on each of these bets (the others once)",
    )
    max_states: int = Field(
        20_000,
        ge=1,
        le=exact_chain.MAX_STATES,
        description="a chain with more states within the hand limit is reported as not finite",
    )

    @field_validator("goals", "hands")
    @classmethod
    def _distinct(cls, values: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(values)) != len(values):
            raise ValueError(f"each value once; allowed: distinct integers (got {list(values)})")
        return values

    @model_validator(mode="after")
    def _sessions(self) -> OptimumConfig:
        """Every cell is a valid session (the session's own error, with the key of the grid)."""
        keys = {"goal": "goals", "table_max": "table_maxima", "hands": "hands", "bets": "bets"}
        for cell in cells(self):
            try:
                session(self, *cell)
            except ValueError as error:
                text = str(error)
                key = next((keys[f] for f in keys if text.startswith(f)), None)
                raise ValueError(
                    text if key is None or text.startswith(f"{key}:") else f"{key}: {text}"
                ) from None
        entries = system_entries(self)
        if entries:  # evaluate's own checks (a base below the table minimum, a bet not offered)
            try:
                chain_config(session(self, *cells(self)[0]), [entry for _, entry in entries], self.rules)
            except ValidationError as error:
                first = error.errors()[0]
                raise ValueError(f"systems: {first['msg'].removeprefix('Value error, ')}") from None
        return self


def cells(config: OptimumConfig) -> list[tuple[int, int | None, int]]:
    """The grid's sessions as ``(goal, table maximum, hands)``: goals, then maxima, then hand limits."""
    return [(g, m, h) for g in config.goals for m in config.table_maxima for h in config.hands]


def session(config: OptimumConfig, goal: int, table_max: int | None, hands: int) -> so.Session:
    """The :class:`pb_gym.session_optimum.Session` of one cell."""
    rules = config.rules.to_rules()
    return so.Session(
        bankroll=config.bankroll,
        goal=goal,
        hands=hands,
        table_min=config.table_min,
        table_max=table_max,
        bets=config.bets,
        decks=rules.decks,
        rules=rules,
    )


def chain_config(target: so.Session, systems: list, rules: RulesConfig | None = None) -> StudyConfig:
    """An evaluate study of ``systems`` on the session ``target`` (whole-unit amounts: the unit is 1):
    the same bankroll, goal (``win_goal``: the goal minus the bankroll), hand limit and table limits
    (no maximum: :data:`NO_MAXIMUM`), ``rules`` (default: the session's decks). Its exact chain
    (:func:`pb_gym.experiments.evaluate.exact_chain.exact_system`) values each system on the session."""
    bankroll = float(Fraction(target.bankroll_ticks, target.ticks_per_unit))
    goal = float(Fraction(target.goal_ticks, target.ticks_per_unit))
    top = NO_MAXIMUM if target.table_max is None else float(target.table_max)
    return StudyConfig(
        name="optimum",
        rules=rules if rules is not None else RulesConfig.model_validate({"decks": target.decks}),
        table=TableLimits(unit=1.0, minimum=float(target.table_min), maximum=top),
        bankroll=bankroll,
        sessions=1,
        hands=target.hands,
        win_goal=goal - bankroll,
        sample_paths=0,
        systems=systems,
    )


def system_entries(config: OptimumConfig) -> list[tuple[str, dict]]:
    """The systems as valued: ``(name, evaluate config entry)``, those with a bet once per
    ``system_bets`` (named ``NAME (bet)``)."""
    out = []
    for system in config.systems:
        data = system.model_dump(exclude_none=True)
        name = system.name or system.type
        if "bet" in type(system).model_fields and system.type not in IGNORE_BET:
            out += [
                (f"{name} ({bet})", {**data, "bet": bet, "name": f"{name} ({bet})"})
                for bet in config.system_bets
            ]
        else:
            out.append((name, {**data, "name": name}))
    return out


def _optimum(target: so.Session) -> dict:
    started = time.perf_counter()
    summary = so.solve(target).to_json()
    bold = {bet: so.evaluate(target, so.bold_play(target, bet)) for bet in MAIN_BETS if bet in target.bets}
    timid = so.evaluate(target, so.timid_play(target, "player", int(target.table_min)))
    return {
        "p_goal": summary["p_goal"],
        "start": summary["start"],
        "expected_hands": summary["expected_hands"],
        "bold": bold,
        "timid": timid,
        "seconds": time.perf_counter() - started,
    }


def _systems(target: so.Session, config: OptimumConfig, entries: list[tuple[str, dict]]) -> dict:
    """Each system's exact P(goal) on the session (or the chain's reason), by evaluate's chain."""
    if not entries:
        return {}
    study_config = chain_config(target, [entry for _, entry in entries], config.rules)
    out = {}
    for (name, _), system in zip(entries, study_config.systems, strict=True):
        result = exact_chain.exact_system(system, study_config, config.max_states)
        if "reason" in result:
            out[name] = {"reason": result["reason"]}
        else:
            keep = ("p_target", "p_ruin", "p_hand_limit", "expected_hands", "states", "seconds")
            out[name] = {key: result[key] for key in keep}
    return out


def run(config: OptimumConfig, progress: bool = False) -> dict:
    """Every cell of the grid (serially; with ``progress``, a line on stderr as each begins)."""
    started = time.perf_counter()
    entries = system_entries(config)
    rows, optimum_seconds, chain_seconds = [], 0.0, 0.0
    for goal, top, hands in cells(config):
        if progress:
            print(f"optimum: goal {goal}, table max {top}, {hands} hands ...", file=sys.stderr, flush=True)
        target = session(config, goal, top, hands)
        optimum = _optimum(target)
        clock = time.perf_counter()
        systems = _systems(target, config, entries)
        chain_seconds += time.perf_counter() - clock
        optimum_seconds += optimum.pop("seconds")
        rows.append({"goal": goal, "table_max": top, "hands": hands, **optimum, "systems": systems})
    return {
        "bankroll": config.bankroll,
        "table_min": config.table_min,
        "bets": list(session(config, *cells(config)[0]).bets),
        "decks": config.rules.to_rules().decks,
        "max_states": config.max_states,
        "cells": rows,
        "timings": {
            "optimum_seconds": optimum_seconds,
            "chain_seconds": chain_seconds,
            "total_seconds": time.perf_counter() - started,
        },
    }


# ------------------------------------------------------------------------------------- the report
def best_system(cell: dict, bet: str) -> tuple[str, float] | None:
    """The system on ``bet`` with the largest exact P(goal) in ``cell`` (None: none solved)."""
    solved = [
        (name, entry["p_target"])
        for name, entry in cell["systems"].items()
        if name.endswith(f"({bet})") and "p_target" in entry
    ]
    return max(solved, key=lambda item: item[1]) if solved else None


def _best_text(cell: dict, bet: str) -> str:
    systems = [entry for name, entry in cell["systems"].items() if name.endswith(f"({bet})")]
    best = best_system(cell, bet)
    if best is None:
        return "-" if not systems else "none finite"
    unsolved = sum("reason" in entry for entry in systems)
    more = f" ({unsolved} not finite)" if unsolved else ""
    if best[1] == 0.0:  # (no system is best: each one solved is 0)
        return f"0 (every one solved){more}"
    return f"{best[1]:.5f} {best[0].removesuffix(f' ({bet})')}{more}"


def _start(cell: dict) -> str:
    start = cell["start"]
    return "sit out" if start is None else f"{start['stake']} on {start['bet']}"


def markdown(result: dict) -> str:
    """The grid as a table, then each system's closeness to the optimum."""
    lines = [
        f"Bankroll {result['bankroll']} units, table minimum {result['table_min']}; the optimum may bet "
        f"{', '.join(result['bets'])}; exact P(reach the goal), hands independent at the full shoe's odds "
        f"({result['decks']} decks); systems by evaluate's exact chain (not finite: more than "
        f"{result['max_states']:,} states)",
        "",
        "| goal | max | hands | optimum | opening | tie bets | bold player | bold banker | timid | "
        "best system, player | best system, banker |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in result["cells"]:
        top = "none" if cell["table_max"] is None else cell["table_max"]
        bold = cell["bold"]
        lines.append(
            f"| {cell['goal']} | {top} | {cell['hands']} | {cell['p_goal']:.5f} | {_start(cell)} "
            f"| {cell['expected_hands'].get('tie', 0.0):.2f} | {bold.get('player', float('nan')):.5f} "
            f"| {bold.get('banker', float('nan')):.5f} | {cell['timid']:.5f} "
            f"| {_best_text(cell, 'player')} | {_best_text(cell, 'banker')} |"
        )
    lines += ["", *system_lines(result)]
    return "\n".join(lines)


def system_lines(result: dict) -> list[str]:
    """Per system: the cells its chain solves, its largest share of the optimum's P(goal) (and where),
    and the chain's reasons elsewhere (up to their first colon)."""
    names = list(result["cells"][0]["systems"]) if result["cells"] else []
    if not names:
        return []
    lines = [
        "| system | cells solved | largest P(goal) / optimum | where (goal, max, hands) | not finite: why |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        entries = [(cell, cell["systems"][name]) for cell in result["cells"]]
        solved = [(cell, e) for cell, e in entries if "p_target" in e]
        reasons = sorted({e["reason"].split(":")[0] for _, e in entries if "reason" in e})
        share = where = "-"
        if solved:
            cell, entry = max(solved, key=lambda item: item[1]["p_target"] / item[0]["p_goal"])
            share = f"{entry['p_target'] / cell['p_goal']:.3f}"
            where = f"{cell['goal']}, {cell['table_max'] or 'none'}, {cell['hands']}"
        lines.append(
            f"| {name} | {len(solved)} of {len(entries)} | {share} | {where} | {'; '.join(reasons)} |"
        )
    return lines


def report(result: dict) -> str:
    seconds = result["timings"]
    return (
        "The session optimum beside bold play, timid play and the classic systems\n"
        + markdown(result)
        + f"\n({seconds['total_seconds']:.1f} s: the optimum, bold and timid play "
        f"{seconds['optimum_seconds']:.1f} s, the systems' chains {seconds['chain_seconds']:.1f} s)"
    )


OUTPUT_NAMES = ("optimum.json", "optimum.csv", "optimum.md", "optimum.png")


def csv_rows(result: dict) -> tuple[list[str], list[dict]]:
    """One row per cell: the session, the optimum, bold and timid play and every system's P(goal)
    (empty where its chain is not finite)."""
    names = list(result["cells"][0]["systems"]) if result["cells"] else []
    fields = ["goal", "table_max", "hands", "optimum", "start_bet", "start_stake", "tie_bets"]
    fields += [f"bold_{bet}" for bet in MAIN_BETS] + ["timid", *names]
    rows = []
    for cell in result["cells"]:
        start = cell["start"] or {"bet": None, "stake": 0}
        row = {
            "goal": cell["goal"],
            "table_max": cell["table_max"],
            "hands": cell["hands"],
            "optimum": cell["p_goal"],
            "start_bet": start["bet"],
            "start_stake": start["stake"],
            "tie_bets": cell["expected_hands"].get("tie", 0.0),
            "timid": cell["timid"],
            **{f"bold_{bet}": cell["bold"].get(bet) for bet in MAIN_BETS},
            **{name: cell["systems"][name].get("p_target") for name in names},
        }
        rows.append(row)
    return fields, rows


def write_outputs(result: dict, folder: Path) -> list[Path]:
    """``optimum.json``, ``optimum.csv`` (a row per cell), ``optimum.md`` and ``optimum.png``
    (:func:`pb_gym.experiments.optimum.plot.plot`)."""
    from pb_gym.experiments.common import plotting
    from pb_gym.experiments.optimum import plot

    fields, rows = csv_rows(result)
    written = study.write_table_files("optimum", result, folder, fields, rows, markdown(result))
    png = folder / "optimum.png"
    return written + plotting.drawn_or_noted(lambda: [plot.plot(result, png)], folder, [png.name])


main = study.command("optimum", OptimumConfig, OUTPUT_NAMES, run, write_outputs, report, serial=True)
"""``pb-gym experiment optimum CONFIG``: the study's entry point
(:func:`pb_gym.experiments.common.study.command`)."""

__all__ = [
    "NO_MAXIMUM",
    "OptimumConfig",
    "best_system",
    "cells",
    "chain_config",
    "csv_rows",
    "main",
    "markdown",
    "report",
    "run",
    "session",
    "system_entries",
    "write_outputs",
]
