"""The Martingale illusion, the ruin study's last section: a banker Martingale aiming at a small win.

The job of this file is the section's computation (its config schema and its numbers); the teaching
page and the plot that show them are in :mod:`pb_gym.experiments.ruin.lesson`.

A Martingale on banker stakes 1, 2, 4, ... units after each loss (the series restarts when the next
stake would pass the table maximum) and stops as soon as it is ``goal`` units up, or at ruin, or
after ``hands`` hands. Next to it, flat one-unit banker betting over the same dealt hands. Both run as
one ``pb-gym evaluate`` study per table maximum (:func:`pb_gym.experiments.evaluate.run_study`: the betting
systems of :mod:`pb_gym.agents.systems`, chunks of 5,000 sessions seeded from the ruin config's seed; the
engine deals
from each chunk's first child seed, so this section never deals the shoes of the simulation).

**Resumable.** With the study's chunk store (``OUT/.partial``, :mod:`pb_gym.experiments.common.chunk_store`)
every
table maximum's finished chunks are kept in ``OUT/.partial/martingale-max-M/``, whose identity is the
ruin run's (its config, seed and pb-gym version) plus that study's config: a rerun of an interrupted
study recomputes only the missing chunks and gives the same result to the last bit, and a rerun with
another config refuses to mix them (the ruin study's own store refuses first).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator

from pb_gym import memory
from pb_gym.experiments.common import chunk_store
from pb_gym.experiments.common.stats import wilson
from pb_gym.experiments.common.yaml_config import RulesConfig, Strict, validate


class MartingaleIllusion(Strict):
    """The Martingale illusion: a banker Martingale aiming at a small win under table limits."""

    bankroll: int = Field(1000, ge=2, description="starting bankroll, in units (the base stake)")
    goal: int = Field(10, ge=1, description="stop as soon as up this many units")
    table_max: tuple[int, ...] = Field(
        (8, 32, 128, 512), description="the table maximums compared, in units (a series restarts there)"
    )
    sessions: int = Field(10_000, ge=10, description="sessions per table maximum, on the same hands")
    hands: int = Field(1000, ge=10, description="hands per session at most")

    @field_validator("table_max")
    @classmethod
    def _above_base(cls, table_max: tuple[int, ...]) -> tuple[int, ...]:
        if not table_max or any(m < 2 for m in table_max):
            raise ValueError("one or more table maximums of at least 2 units")
        return table_max


def section_store(
    store: chunk_store.ChunkStore | None, name: str, config: dict
) -> chunk_store.ChunkStore | None:
    """The store of one evaluate study of this section, inside the ruin study's store: the folder
    ``store.directory / name``, its identity the ruin run's key and the study's ``config``. None
    without a store (no ``--out``: nothing is kept)."""
    if store is None:
        return None
    return chunk_store.ChunkStore(
        store.directory / name, {"study": "ruin.martingale", "ruin_run": store.key, "config": config}
    )


def studies(martingale: MartingaleIllusion, rules: RulesConfig, seed: int) -> list:
    """The section's ``pb-gym evaluate`` studies, one per table maximum (validated
    :class:`pb_gym.experiments.evaluate.StudyConfig` objects): the Martingale, and in the first one flat
    banker betting too (it does not depend on the maximum: once, for contrast, on the same hands)."""
    from pb_gym.experiments.evaluate import StudyConfig

    m = martingale
    return [
        validate(
            {
                "name": f"martingale-max-{table_max}",
                "rules": rules.model_dump(),
                "table": {"unit": 1, "minimum": 1, "maximum": table_max},
                "bankroll": m.bankroll,
                "sessions": m.sessions,
                "hands": m.hands,
                "win_goal": m.goal,
                "seed": seed,
                "sample_paths": 0,
                "systems": [{"type": "martingale", "bet": "banker", "on_cap": "reset", "name": "martingale"}]
                + ([{"type": "flat", "bet": "banker", "name": "flat"}] if k == 0 else []),
            },
            StudyConfig,
            "ruin.martingale",
        )
        for k, table_max in enumerate(m.table_max)
    ]


def check_memory(martingale: MartingaleIllusion, rules: RulesConfig, seed: int) -> None:
    """Refuse (:class:`pb_gym.memory.TooLarge`) a section this machine cannot hold, before the ruin
    study computes anything: each study runs alone, serially, keeping every session's result."""
    from pb_gym.experiments.evaluate import check_memory as check_study

    for study in studies(martingale, rules, seed):
        try:
            check_study(study, 1, final_bankrolls=True)
        except memory.TooLarge as error:  # name the keys of the ruin config, not of the inner study
            raise memory.TooLarge(
                f"the ruin study's Martingale section: {error} (the keys are under "
                "`martingale:` in the ruin config)"
            ) from None


def martingale_illusion(
    martingale: MartingaleIllusion, rules: RulesConfig, seed: int, store: chunk_store.ChunkStore | None = None
) -> dict:
    """Run the section: for each table maximum, the Martingale (and, once, flat banker betting) over
    the same hands. Returns per maximum and system a row (P(small win) with its Wilson interval,
    P(loss), the average loss when it loses, the EV per unit wagered with its CI and the exact edge),
    and histograms of the session results over common bins (the plot's).

    ``store``: the ruin study's chunk store; each study keeps its finished chunks in it
    (:func:`section_store`), so an interrupted section resumes.
    """
    from pb_gym.experiments.evaluate import run_study

    m = martingale
    rows = []
    results = {}
    for table_max, study in zip(m.table_max, studies(martingale, rules, seed), strict=True):
        report = run_study(study, store=section_store(store, study.name, study.model_dump(mode="json")))
        for system in report["systems"]:
            result = np.asarray(report["final_bankrolls"][system["name"]]) - m.bankroll
            won = result >= m.goal - 1e-9
            lost = result < 0
            rows.append(
                {
                    "system": system["name"],
                    "table_max": table_max,
                    "p_goal": float(won.mean()),
                    "p_goal_ci95": wilson(int(won.sum()), len(result)),
                    "p_loss": float(lost.mean()),
                    "mean_loss_when_lost": float(-result[lost].mean()) if lost.any() else 0.0,
                    "largest_loss": float(-result.min()) if lost.any() else 0.0,
                    "p_ruin": system["p_ruin"],
                    "mean_result": float(result.mean()),
                    "ev_per_unit_wagered": system["ev_per_unit_wagered"],
                    "ci95": system["ci95"],
                    "exact_edge": system["exact_edge"],
                    "table_max_binds": system["table_max_binds"],
                }
            )
            results[f"{system['name']}@{table_max}"] = result
    everything = np.concatenate(list(results.values()))
    edges = np.linspace(everything.min(), everything.max(), 61)
    histograms = {key: np.histogram(result, bins=edges)[0].tolist() for key, result in results.items()}
    return {
        "bankroll": m.bankroll,
        "goal": m.goal,
        "sessions": m.sessions,
        "hands": m.hands,
        "rows": rows,
        "bin_edges": edges.tolist(),
        "histograms": histograms,
    }


__all__ = ["MartingaleIllusion", "studies", "check_memory", "martingale_illusion", "section_store"]
