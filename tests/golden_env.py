"""Digests of the environments' behaviour over a few hundred steps per scenario: every observation,
reward, flag, info and bankroll, hashed bit for bit.

``tests/data/env_golden.json`` holds the digests recorded with the environments as they were before
the table session (:mod:`pb_gym.session`) replaced their internals (commit 0115b09); the test in
``tests/core/test_session.py`` checks that the same seeds and actions still give the same bits. Run
``python tests/golden_env.py`` to print the digests of the code as it is now.

Two digests were recorded again since, with the reason: ``single/expected_reward_info_ev`` and
``vector/box_disabled`` (the scenarios with exact EVs) when the exact odds' product with the pay table
became a row-by-row kernel (:func:`pb_gym.exact.row_products`) instead of BLAS, whose rounding depended
on the batch's shape (a table's EV differed in the last bits between a single env and a vector env).
Against the digests of 0115b09, 566 of the single scenario's 2,400 rewards and EVs moved, by at most
1.8e-15, and 1,923 of the vector scenario's 11,200, by at most 1.1e-16. Every other scenario is as
recorded at 0115b09.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "data" / "env_golden.json"

SINGLE: dict[str, dict] = {
    "discrete": dict(action_mode="discrete"),
    "multidiscrete_raw_dict": dict(action_mode="multidiscrete", observation="dict", obs_scale="raw"),
    "box": dict(action_mode="box"),
    "box_forced_small": dict(action_mode="box", allow_no_bet=False, bankroll=120, table_min=10, table_max=60),
    "fraction_forced": dict(
        action_mode="multidiscrete",
        stake_unit="fraction",
        allow_no_bet=False,
        bankroll=300,
        table_max=100,
        win_target=500,
    ),
    "discrete_target_one_shoe": dict(
        action_mode="discrete",
        win_target=1100,
        one_shoe=True,
        max_hands=None,
        decks=1,
        cut_card=16,
        hand_after_cut=True,
    ),
    "expected_reward_info_ev": dict(
        action_mode="discrete", reward="expected", info_ev=True, side_bets=("dragon7", "panda8"), max_hands=30
    ),
    "hidden_no_side_bets": dict(
        action_mode="multidiscrete",
        visible_discards=False,
        side_bets=(),
        history=7,
        banker_variant="ez",
        tie_pays=9,
    ),
    "no_commission_no_info": dict(
        action_mode="box",
        hand_info=False,
        banker_variant="no-commission",
        burn=False,
        unit=5,
        table_min=5,
        table_max=50,
    ),
}
"""Keyword arguments of the single env in each scenario."""

VECTOR: dict[str, dict] = {
    "next_step": dict(action_mode="discrete", autoreset_mode="NextStep", max_hands=25),
    "same_step_info": dict(
        action_mode="multidiscrete", autoreset_mode="SameStep", hand_info=True, bankroll=100, max_hands=40
    ),
    "box_disabled": dict(
        action_mode="box", autoreset_mode="Disabled", max_hands=None, max_episode_steps=30, info_ev=True
    ),
}


def _feed(h, value) -> None:
    """Hash a value: arrays by dtype, shape and bytes; dicts by sorted keys; scalars by value (a
    numpy scalar and the Python scalar of the same value hash alike)."""
    if isinstance(value, dict):
        for key in sorted(value):
            h.update(key.encode())
            _feed(h, value[key])
    elif isinstance(value, np.ndarray) and value.dtype == object:
        for item in value:
            _feed(h, "None" if item is None else item)
    elif isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        for item in value:
            _feed(h, item)
    elif isinstance(value, (bool, np.bool_)):
        h.update(f"bool:{bool(value)}".encode())
    elif isinstance(value, (int, np.integer)):
        h.update(f"int:{int(value)}".encode())
    elif isinstance(value, (float, np.floating)):
        # by value and width, not by type: a Python float or a numpy scalar of the same bits agree
        h.update(f"f{np.asarray(value).dtype.itemsize}:{float(value).hex()}".encode())
    else:
        h.update(f"{type(value).__name__}:{value!r}".encode())


def _box_noise(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Box actions with some entries outside [0, 1] and NaN (clipped as documented)."""
    a = rng.random(shape, dtype=np.float32) * 1.4 - 0.2
    a[rng.random(shape) < 0.05] = np.nan
    return a


def single_digest(kwargs: dict, steps: int = 300, seed: int = 7) -> str:
    from pb_gym.envs import PuntoBancoEnv

    env = PuntoBancoEnv(**kwargs)
    h = hashlib.sha256()
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    _feed(h, (obs, info))
    for _ in range(steps):
        if kwargs.get("action_mode") == "box":
            action = _box_noise(rng, env.action_space.shape)
        else:
            action = env.action_space.sample()
            if rng.random() < 0.3:
                _feed(h, env.action_masks())
        step = env.step(action)
        _feed(h, step)
        _feed(h, env.bankroll)
        if step[2] or step[3]:
            _feed(h, env.reset(seed=int(rng.integers(0, 1000)) if rng.random() < 0.5 else None))
    return h.hexdigest()


def vector_digest(kwargs: dict, n: int = 7, steps: int = 200, seed: int = 3) -> str:
    from pb_gym.envs import PuntoBancoVectorEnv

    venv = PuntoBancoVectorEnv(n, **kwargs)
    h = hashlib.sha256()
    rng = np.random.default_rng(seed)
    venv.action_space.seed(seed)
    _feed(h, venv.reset(seed=seed))
    for _ in range(steps):
        if kwargs.get("action_mode") == "box":
            actions = _box_noise(rng, venv.action_space.shape)
        else:
            actions = venv.action_space.sample()
            _feed(h, venv.action_masks())
        step = venv.step(actions)
        _feed(h, step)
        _feed(h, venv.bankroll)
        if kwargs.get("autoreset_mode") == "Disabled":
            done = step[2] | step[3]
            if done.any():
                _feed(h, venv.reset(options={"reset_mask": done}))
    return h.hexdigest()


def digests() -> dict[str, str]:
    out = {f"single/{k}": single_digest(v) for k, v in SINGLE.items()}
    out.update({f"vector/{k}": vector_digest(v) for k, v in VECTOR.items()})
    return out


if __name__ == "__main__":
    found = digests()
    json.dump(found, sys.stdout, indent=1)
    print()
    if len(sys.argv) > 1 and sys.argv[1] == "--write":
        GOLDEN.write_text(json.dumps(found, indent=1) + "\n")
