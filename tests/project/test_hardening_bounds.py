"""Values that look right and mean something else, and runs far larger than anyone means: each refused
with a message naming the key and what is allowed (the vector env's seeds, a quoted number, a name
with a newline, a run of 10**12 sessions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pb_gym import catalog
from pb_gym.envs.config import MAX_EPISODE_HANDS
from pb_gym.envs.vector import PuntoBancoVectorEnv
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.yaml_config import ConfigError, parse_yaml, validate
from pb_gym.experiments.evaluate.settings import StudyConfig

STUDY = {"sessions": 10, "hands": 10, "systems": [{"type": "flat"}]}


# ---------------------------------------------------------------------------------- quoted numbers
@pytest.mark.parametrize(
    "edit, key",
    [
        ({"win_goal": "10"}, "win_goal"),
        ({"bankroll": "500"}, "bankroll"),
        ({"seed": "3"}, "seed"),
        ({"sessions": "1e3"}, "sessions"),
        ({"table": {"unit": "10"}}, "table.unit"),
        ({"rules": {"decks": "8"}}, "rules.decks"),
        ({"systems": [{"type": "flat", "base": "2"}]}, "systems.0.flat.base"),
    ],
)
def test_a_quoted_number_is_refused_naming_the_key(edit, key):
    with pytest.raises(ConfigError) as error:
        validate({**STUDY, **edit}, StudyConfig, "study.yaml")
    assert str(error.value).startswith(f"study.yaml: {key}: a quoted string is not a number here")


def test_text_keys_still_take_text_and_numbers_still_load():
    config = validate(
        parse_yaml("name: '10'\nwin_goal: 10\nseed: 3\nhands: 10\nsystems: [{type: flat}]\n"), StudyConfig
    )
    assert config.name == "10" and config.win_goal == 10.0 and config.seed == 3


# ---------------------------------------------------------------------------------------- run size
def test_a_study_of_more_hands_than_pb_gym_runs_is_a_config_error():
    with pytest.raises(ConfigError, match=r"sessions x hands = 1,000,000,000,000 x 10 hands is larger"):
        validate({**STUDY, "sessions": 10**12}, StudyConfig)
    with pytest.raises(ConfigError, match=r"\(1,111,112 chunks\) is larger than pb-gym runs"):
        validate({**STUDY, "sessions": 10**9, "hands": 1, "chunk_sessions": 900}, StudyConfig)
    limit = scale.MAX_HANDS_DEALT // 1000
    assert validate({**STUDY, "sessions": limit, "hands": 1000, "chunk_sessions": 10**6}, StudyConfig)


def test_a_plan_of_too_many_chunks_or_items_is_refused_before_it_is_made():
    with pytest.raises(scale.RunTooLarge, match=r"1,000,001 chunks"):
        scale.plan(scale.MAX_CHUNKS + 1, 1, 0, range(0))
    with pytest.raises(scale.RunTooLarge, match=r"at most 10,000,000,000 items"):
        scale.plan(scale.MAX_ITEMS + 1, 10**5, 0, range(0))
    assert len(scale.plan(scale.MAX_CHUNKS, 1, 0, range(2))) == 2
    assert issubclass(scale.RunTooLarge, ValueError)


def test_the_cli_refuses_a_roads_study_of_too_many_chunks_before_it_writes(tmp_path):
    from pb_gym.experiments import cli

    config = tmp_path / "roads.yaml"
    config.write_text("shoes: 1000000000\nchunk_shoes: 100\n")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["experiment", "roads", str(config), "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and not (tmp_path / "out").exists()
    from pb_gym.experiments.common import outputs

    assert tmp_path / "out" not in outputs._LOCKS  # a command that ended lets go of its folder


# -------------------------------------------------------------------------------------------- names
@pytest.mark.parametrize("name", ["nl\n", "a\nb", "", "A", "a b", "tie\x00"])
def test_a_bet_name_must_be_wholly_lower_case_letters_digits_and_underscores(name):
    with pytest.raises(ValueError, match="needs a 'name' of lower-case letters"):
        catalog.bet_from_dict({"name": name, "rows": [{"when": {"winner": "tie"}, "pays": 8}]})


@pytest.mark.parametrize("address", ["tcp://host:8786\n", "tcp://host:8786\nx"])
def test_a_scheduler_address_with_a_newline_is_refused(address):
    with pytest.raises(ValueError, match="is not a scheduler address"):
        scale.check_scheduler_address(address)


# ------------------------------------------------------------------------------- vector env (reset)
@pytest.mark.parametrize(
    "seed, problem",
    [
        ([1.9, 2.0, 3.0], r"seed\[0\]=1.9 is not allowed"),
        ("1234", r"seed='1234' is not allowed"),
        (b"12", r"seed=b'12' is not allowed"),
        (2**64, r"seed=18446744073709551616 is not allowed; allowed: an int from 0 to 2\*\*63 - 3"),
        (2**63 - 2, r"is not allowed; allowed: an int from 0 to 2\*\*63 - 3"),
        (-1, r"seed=-1 is not allowed"),
        (np.float64(3.0), r"is not allowed"),
        (True, r"seed=True is not allowed"),
        ([1, True, 2], r"seed\[1\]=True is not allowed"),
        ([1, -2, 3], r"seed\[1\]=-2 is not allowed"),
        ([1, 2**63, 3], r"seed\[1\]=9223372036854775808 is not allowed"),
        ([1, 2], r"got 2 values"),
    ],
)
def test_the_vector_env_refuses_a_seed_it_would_misread(seed, problem):
    env = PuntoBancoVectorEnv(3)
    with pytest.raises(ValueError, match=problem):
        env.reset(seed=seed)


def test_the_vector_env_takes_every_seed_it_documents():
    env = PuntoBancoVectorEnv(3)
    first, _ = env.reset(seed=[1, None, np.int64(5)])
    again, _ = env.reset(seed=np.array([1, 7, 5]))
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[2], again[2])
    env.reset(seed=2**63 - 3)  # the largest: table 2 is seeded 2**63 - 1


@pytest.mark.parametrize("options", ["x", ["reset_mask"], 3])
def test_the_vector_env_refuses_options_that_are_not_a_mapping(options):
    with pytest.raises(ValueError, match="options=.* is not allowed; allowed: None or a dict"):
        PuntoBancoVectorEnv(2).reset(options=options)


@pytest.mark.parametrize("max_hands", [2**63, 2**64, MAX_EPISODE_HANDS + 1, 0])
def test_max_hands_beyond_the_counters_is_refused(max_hands):
    with pytest.raises(
        ValueError, match=r"max_hands=.* is not allowed; allowed: None or an integer from 1 to"
    ):
        PuntoBancoVectorEnv(2, max_hands=max_hands)


def test_nan_and_minus_inf_box_actions_mean_no_bet_as_documented():
    """The documented clip (NaN = 0): the golden digests step with such actions, so their meaning is
    kept, and shown here against an explicit 0."""
    env = PuntoBancoVectorEnv(4, action_mode="box", side_bets=())
    k = env.single_action_space.shape[0]
    odd = np.array([[math.nan] * k, [-math.inf] * k, [-1.0] * k, [0.0] * k], dtype=np.float32)
    env.reset(seed=5)
    _, reward, *_, info = env.step(odd)
    assert np.all(reward == 0.0) and np.all(env.tables.bankroll == env.tables.bankroll[3])


def test_exponent_numbers_are_numbers_as_yaml_1_2_reads_them():
    """PyYAML (YAML 1.1) reads 1e308 or 3e-4 as text; the loader reads them as the floats they are
    (so that refusing quoted numbers does not refuse them), and plain text keeps pydantic's message."""
    data = parse_yaml("a: 1e308\nb: 3e-4\nc: 1.5e3\nd: '1e3'\ne: 1e3x\nf: -2E+3\n")
    assert data == {"a": 1e308, "b": 3e-4, "c": 1500.0, "d": "1e3", "e": "1e3x", "f": -2000.0}
    assert validate({**STUDY, "bankroll": parse_yaml("x: 1e6")["x"]}, StudyConfig).bankroll == 1e6
    with pytest.raises(ConfigError, match=r"bankroll: Input should be a valid number, unable to parse"):
        validate({**STUDY, "bankroll": "ten"}, StudyConfig)
