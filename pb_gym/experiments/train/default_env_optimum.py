"""What can be earned on the default env (``pb_gym/PuntoBanco-v0``), priced by the exact calculator.

``python -m pb_gym.experiments.train.default_env_optimum [--tables 1024] [--hands 1000] [--seed 7]
[--levels]``

The default env deals 100-hand episodes, each from a fresh 8-deck shoe, with the discards visible
(the observation's ``shoe`` field). For each hand it deals, the exact EV of every bet spot for the
cards unseen before the hand (the env's ``info_ev``) gives:

* ``perfect``: the perfect-information bettor, one unit on the best spot whose exact EV is positive,
  nothing otherwise: the optimum of one-unit bets, in units per hand dealt;
* ``positive_share``: the share of hands on which some spot has a positive exact EV (and per spot);
* ``how_dragon7``: Stephen How's unbalanced Dragon 7 count (start at -32, A +1, 4-7 -1, 8 and 9 +2;
  one unit on Dragon 7 when the running count is >= 0: the counting study's ``how_as_stated``), its
  exact EV per hand dealt and the share of hands it bets.

``--levels``: the perfect bettor at each of the env's stake levels (1, 2, 5, 10, 25 units) on its
100-unit bankroll, where a ruin ends the episode (a new one starts from a fresh shoe): the exact EV of
its stakes per hand dealt, and the episodes ruined.

Every figure is per hand dealt, with its 95% CI over episodes (the episodes are independent).
docs/rl-libraries.md judges the observation-choice table (:mod:`.observation_choice`) against it.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from pb_gym import strict_json

HOW_TAGS = np.array([1, 0, 0, -1, -1, -1, -1, 2, 2, 0, 0, 0, 0])
"""Stephen How's unbalanced Dragon 7 count, by rank A..K (start -32: the running count after the cards
seen is minus the tags of the cards unseen)."""


class _Sums:
    """Per-episode sums of a few figures over a vector env's tables (SAME_STEP autoreset)."""

    def __init__(self, tables: int, hands: int, keys: tuple[str, ...]) -> None:
        self.size = tables * (hands + 1)  # at most one new episode per table and hand
        self.sums = {key: np.zeros(self.size) for key in (*keys, "hands")}
        self.episode = np.arange(tables)
        self.next = tables

    def add(self, key: str, weights: np.ndarray) -> None:
        self.sums[key] += np.bincount(self.episode, weights=weights, minlength=self.size)

    def end(self, done: np.ndarray) -> None:
        count = int(done.sum())
        self.episode[done] = self.next + np.arange(count)
        self.next += count

    def figures(self) -> dict[str, Any]:
        from pb_gym.ci import ratio_ci

        hands = self.sums["hands"]
        used = hands > 0
        out: dict[str, Any] = {"hands": int(hands.sum()), "episodes": int(used.sum())}
        for key, value in self.sums.items():
            if key != "hands":
                out[key] = ratio_ci(value[used], hands[used])
        return out


def _env(tables: int, seed: int):
    from gymnasium.vector import AutoresetMode

    from pb_gym.envs import PuntoBancoVectorEnv

    env = PuntoBancoVectorEnv(tables, autoreset_mode=AutoresetMode.SAME_STEP, info_ev=True, hand_info=True)
    env.reset(seed=seed)
    return env


def measure(tables: int = 1024, hands: int = 1000, seed: int = 7) -> dict[str, Any]:
    """The perfect bettor, the positive shares and How's count on ``tables`` x ``hands`` hands of the
    default env (table ``i`` seeded ``seed + i``), never betting (so no episode is ruined)."""
    from pb_gym import engine
    from pb_gym.rules import BETS

    env = _env(tables, seed)
    cfg = env.config
    dragon7 = cfg.bets.column("dragon7")
    keys = ("perfect", "positive_share", "how_dragon7", "how_bet_share")
    sums = _Sums(tables, hands, keys + tuple(f"positive_share_{bet}" for bet in BETS))
    no_bet = np.zeros(tables, dtype=np.int64)
    for _ in range(hands):
        how = -(engine.next_hand_composition(cfg.rules, env.tables.shoe) @ HOW_TAGS) >= 0
        _, _, terminated, truncated, info = env.step(no_bet)
        ev = info["ev"]  # each spot's exact EV for the cards unseen before this hand
        best = ev.max(axis=1)
        sums.add("hands", np.ones(tables))
        sums.add("perfect", np.maximum(best, 0.0))
        sums.add("positive_share", best > 0)
        for column, bet in enumerate(BETS):
            sums.add(f"positive_share_{bet}", ev[:, column] > 0)
        sums.add("how_dragon7", np.where(how, ev[:, dragon7], 0.0))
        sums.add("how_bet_share", how)
        sums.end(terminated | truncated)
    env.close()
    return {"tables": tables, "hands_per_table": hands, "seed": seed, **sums.figures()}


def measure_levels(tables: int = 512, hands: int = 400, seed: int = 7) -> list[dict[str, Any]]:
    """The perfect bettor at each stake level of the default env, on its bankroll (ruin ends an
    episode): the exact EV of its stakes per hand dealt and the episodes ruined."""
    from pb_gym import engine

    rows = np.arange(tables)
    out = []
    env = _env(tables, seed)
    levels = env.config.stake_levels
    env.close()
    for level, stake in enumerate(levels):
        env = _env(tables, seed)
        cfg = env.config
        sums = _Sums(tables, hands, ("exact", "ruined"))
        for _ in range(hands):
            ev = cfg.bets.expected_values(engine.next_hand_composition(cfg.rules, env.tables.shoe))
            best = ev.argmax(axis=1)
            positive = ev[rows, best] > 0
            actions = np.where(positive, 1 + best * len(levels) + level, 0)
            _, _, terminated, truncated, info = env.step(actions)
            sums.add("hands", np.ones(tables))
            sums.add("exact", (info["stakes"] * info["ev"]).sum(axis=1))
            sums.add("ruined", terminated)
            sums.end(terminated | truncated)
        env.close()
        figures = sums.figures()
        ruined = int(round(figures.pop("ruined")["estimate"] * figures["hands"]))
        out.append({"stake": float(stake), **figures, "episodes_ruined": ruined})
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=1024)
    parser.add_argument("--hands", type=int, default=1000, help="hands per table")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--levels", action="store_true", help="the perfect bettor at each stake level")
    args = parser.parse_args(argv)
    result: dict[str, Any] = measure(args.tables, args.hands, args.seed)
    if args.levels:
        result["levels"] = measure_levels(args.tables, args.hands, args.seed)
    print(strict_json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
