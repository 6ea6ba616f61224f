"""The table session (pb_gym.session) and the environments built on it."""

import json

import pytest

from golden_env import GOLDEN, SINGLE, VECTOR, single_digest, vector_digest

_RECORDED = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_env_is_bit_for_bit_as_recorded(name):
    """Observations, rewards, flags, infos, masks and bankrolls of 300 steps, as recorded before the
    session layer replaced the env's internals (tests/golden_env.py)."""
    assert single_digest(SINGLE[name]) == _RECORDED[f"single/{name}"]


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_vector_env_is_bit_for_bit_as_recorded(name):
    assert vector_digest(VECTOR[name]) == _RECORDED[f"vector/{name}"]
