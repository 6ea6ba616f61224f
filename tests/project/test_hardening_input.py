"""Hostile and unlucky input: every bad input is refused with a clear error naming what is
wrong, before a compiled kernel or an allocation can go wrong; the command line answers each fault with
one line and a documented exit status."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import ResetNeeded

from pb_gym import Rules, engine
from pb_gym.envs import actions, observation, stepping
from pb_gym.envs import config as env_config
from pb_gym.envs import tables as env_tables
from pb_gym.envs.punto_banco import PuntoBancoEnv
from pb_gym.envs.vector import PuntoBancoVectorEnv

from repo_paths import ROOT  # noqa: E402


# ------------------------------------------------------------------ the engine's kernels (item 1)
def test_a_state_dealt_with_other_rules_is_refused_not_corrupting_memory():
    # the reproduction: before the check this ended in heap corruption (exit 134 or 139)
    state = engine.init(Rules(decks=1), 64, seed=0)
    for _ in range(3):
        with pytest.raises(
            ValueError,
            match=r"^the state holds shoes of 52 cards but the rules deal "
            r"8-deck shoes of 416 cards: deal a state with the Rules it was made for",
        ):
            engine.deal(Rules(decks=8), state)
    with pytest.raises(ValueError, match="holds shoes of 52 cards"):
        engine.shuffle(Rules(decks=8), state)
    with pytest.raises(ValueError, match="holds shoes of 52 cards"):
        engine.next_hand_composition(Rules(decks=8), state)
    with pytest.raises(
        ValueError,
        match=r"the state's cut card is at card 38 but the rules put it "
        r"at card 32 \(cut_card=20\)",
    ):
        engine.deal(Rules(decks=1, cut_card=20), state)
    engine.deal(Rules(decks=1), state)  # the rules it was made for still deal


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda s: s.position.__setitem__(1, 10_000), "its position is outside the shoe"),
        (lambda s: s.position.__setitem__(1, -3), "its position is outside the shoe"),
        (lambda s: s.counts.__setitem__((1, 4), -1), "its counts by rank are negative"),
        (
            lambda s: s.unseen.__setitem__((1, 4), 99),
            "its counts by rank are negative, above the unseen counts or above a full shoe",
        ),
        (
            lambda s: s.counts.__setitem__((1, 4), s.counts[1, 4] - 1),
            "its counts by rank do not add up to the cards left behind its position",
        ),
        (
            lambda s: s.shoe.__setitem__((1, int(s.position[1]) + 2), 200),
            "a card code of the next hand is outside 1..13",
        ),
        (
            lambda s: s.shoe.__setitem__((1, int(s.position[1])), 0),
            "a card code of the next hand is outside 1..13",
        ),
    ],
)
def test_a_state_edited_by_hand_is_refused_naming_the_table_and_the_problem(edit, problem):
    rules = Rules(decks=1)
    state = engine.init(rules, 3, seed=1)
    edit(state)
    with pytest.raises(ValueError, match=rf"^the state of table 1 is inconsistent: {problem}"):
        engine.deal(rules, state)


def test_dealing_past_the_end_of_the_shoe_is_refused():
    rules = Rules(decks=1, hand_after_cut=True)
    state = engine.init(rules, 2, seed=0)
    # past the cut card but the extra hand still to come: the kernel would read past the shoe
    state.position[0] = 50
    state.counts[0] = 0
    state.counts[0, 0] = 2
    with pytest.raises(ValueError, match="table 0 is inconsistent: it would deal past the end"):
        engine.deal(rules, state)


def test_state_and_result_arrays_are_checked_when_set():
    state = engine.init(Rules(), 4, seed=0)
    with pytest.raises(
        ValueError,
        match=r"^ShoeState.position must be a int32 array of shape \(4,\); "
        r"got \(4,\) of int64$",
    ):
        state.position = np.zeros(4, dtype=np.int64)
    with pytest.raises(ValueError, match=r"ShoeState.counts must be a int16 array of shape \(4, 13\)"):
        engine.ShoeState(**{**vars(engine.init(Rules(), 4, seed=0)), "counts": np.zeros((3, 13), np.int16)})
    out = engine.HandResult.empty(4)
    with pytest.raises(ValueError, match=r"HandResult.outcome must be a uint8 array of shape \(4,\)"):
        out.outcome = np.zeros(5, np.uint8)
    state = engine.init(Rules(), 4, seed=0)
    with pytest.raises(ValueError, match=r"^out holds 3 tables but the state has 4$"):
        engine.deal(Rules(), state, out=engine.HandResult.empty(3))
    with pytest.raises(TypeError, match="out must be a pb_gym.engine.HandResult"):
        engine.deal(Rules(), state, out={"outcome": np.zeros(4)})
    with pytest.raises(ValueError, match=r"active must be a boolean mask of shape \(4,\)"):
        engine.deal(Rules(), state, active=np.ones(4, dtype=np.int64))
    with pytest.raises(ValueError, match=r"active must be a boolean mask of shape \(4,\)"):
        engine.deal(Rules(), state, active=[True] * 4)
    with pytest.raises(ValueError, match="tables must be table indices or a boolean mask"):
        engine.shuffle(Rules(), state, [0.5])


def test_a_negative_seed_is_named():
    with pytest.raises(ValueError, match=r"^seed=-1 is not allowed; allowed: an int >= 0"):
        engine.init(Rules(), 2, seed=-1)
    with pytest.raises(ValueError, match=r"^seed=-5 \(table 1\) is not allowed; allowed: ints >= 0"):
        engine.init(Rules(), 2, seed=[3, -5])


def test_the_env_kernels_refuse_tables_of_another_config():
    cfg = env_config.make_config(history=20)
    other = env_config.make_config(history=200)
    tables = env_tables.new_tables(other, 2, seed=0)
    message = (
        r"^these tables were made for another config \(bead plate of 200 hands, 416-card "
        r"shoes; this config: history=20, 416-card shoes\)"
    )
    with pytest.raises(ValueError, match=message):
        observation.write_obs(cfg, tables)
    active = np.ones(2, dtype=bool)
    with pytest.raises(ValueError, match=message):  # the state a step runs over is checked when built
        stepping.step_state(cfg, tables, np.zeros((2, 1), dtype=np.int64), np.zeros((2, 7)), active)
    tables = env_tables.new_tables(cfg, 2, seed=0)
    with pytest.raises(ValueError, match=r"Tables.bead must be a int8 array of shape \(2, 20\)"):
        tables.bead = np.zeros((3, 20), np.int8)
    with pytest.raises(ValueError, match=r"^out must be a float64 array of shape \(2, 7\)$"):
        actions.decode_actions(cfg, np.zeros(2, dtype=np.int64), tables.bankroll, np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"^active must be a boolean mask of shape \(2,\)$"):
        actions.decode_actions(
            cfg, np.zeros(2, dtype=np.int64), tables.bankroll, np.zeros((2, 7)), np.ones(3, dtype=bool)
        )
    hand = engine.HandResult.empty(5)
    with pytest.raises(ValueError, match="out holds 5 tables but the state has 2"):
        env_tables.record_hand(cfg, tables, hand, tables.shoe)


# ------------------------------------------------------------------- step before reset (item 10)
def test_single_and_vector_env_both_refuse_a_step_before_reset():
    for env, action in ((PuntoBancoEnv(), 0), (PuntoBancoVectorEnv(2), np.zeros(2, dtype=np.int64))):
        with pytest.raises(
            ResetNeeded,
            match=r"^Cannot call env.step\(\) before calling "
            r"env.reset\(\)$",
        ):
            env.step(action)
        env.reset(seed=0)
        env.step(action)


# -------------------------------------------------------------- YAML configs (items 3, 7, 8, 10)
def _load(tmp_path, text: str | bytes, model=None):
    from pb_gym.experiments.common.yaml_config import load
    from pb_gym.experiments.evaluate import StudyConfig

    path = tmp_path / "c.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return load(path, model or StudyConfig)


def _refused(tmp_path, text: str | bytes, model=None) -> str:
    from pb_gym.experiments.common.yaml_config import ConfigError

    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text, model)
    return str(caught.value).replace(str(tmp_path / "c.yaml"), "c.yaml")


def alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines + [f"name: *a{levels}", "systems: [{type: flat}]"]) + "\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    # 9 levels: 2 x 9^9 strings once expanded; the file is a few hundred bytes
    message = _refused(tmp_path, alias_bomb(9))
    assert message == (
        "c.yaml: more than 100,000 values once its aliases (*name) are expanded; a config is far smaller"
    )
    # three levels (1,458 values) load, and the error does not echo the expanded value
    message = _refused(tmp_path, alias_bomb(3))
    assert message.splitlines()[0] == (
        "c.yaml: name: Input should be a valid string (got a list of 9 item(s))"
    )
    assert len(message) < 2000


def test_deep_nesting_is_a_clear_error_not_a_recursion_error(tmp_path):
    message = _refused(tmp_path, "name: " + "[" * 5000 + "]" * 5000 + "\n")
    assert message == (
        "c.yaml: line 1: nested deeper than 32 levels; a config is a few levels of keys and lists"
    )
    message = _refused(tmp_path, "a: &a " + "[" * 20 + "]" * 20 + "\nb: [[[[[[[[[[[[[[*a]]]]]]]]]]]]]]\n")
    assert message == "c.yaml: line 2: the alias *a nests deeper than 32 levels"


def test_a_duplicate_key_is_an_error_naming_it(tmp_path):
    message = _refused(tmp_path, "name: a\nsessions: 10\nname: b\nsystems: [{type: flat}]\n")
    assert message == (
        "c.yaml: line 3: duplicate key 'name' (first given on line 1); each key may appear once in a mapping"
    )
    message = _refused(tmp_path, "systems:\n  - type: flat\n    base: 1\n    base: 2\n")
    assert "line 4: duplicate key 'base' (first given on line 3)" in message
    # a YAML merge key is not a duplicate: explicit keys override the merged ones
    from pb_gym.experiments.common.yaml_config import parse_yaml

    assert parse_yaml("a: &a {x: 1, y: 2}\nb: {<<: *a, y: 3}\n")["b"] == {"x": 1, "y": 3}


def test_true_is_not_a_number_and_numbers_are_finite(tmp_path):
    assert _refused(tmp_path, "sessions: true\nsystems: [{type: flat}]\n") == (
        "c.yaml: sessions: true/false is not allowed here (got True)"
    )
    assert _refused(tmp_path, "systems: [{type: flat, base: false}]\n") == (
        "c.yaml: systems.0.flat.base: true/false is not allowed here (got False)"
    )
    for value in (".inf", "-.inf", ".nan"):
        message = _refused(tmp_path, f"bankroll: {value}\nsystems: [{{type: flat}}]\n")
        assert message.startswith("c.yaml: bankroll: ") and message.endswith(
            " is not allowed; numbers must be finite (no .inf or .nan)"
        )
    assert _refused(tmp_path, "systems: [{type: flat}]\ntable: {maximum: .inf}\n") == (
        "c.yaml: table.maximum: inf is not allowed; numbers must be finite (no .inf or .nan)"
    )
    assert (
        _load(tmp_path, "sessions: 10\nexact_conditional: true\nsystems: [{type: flat}]\n").exact_conditional
        is True
    )


@pytest.mark.parametrize(
    "value,shown", [("1", "1"), ("0.0", "0.0"), ('"yes"', "'yes'"), ('"false"', "'false'")]
)
def test_a_switch_is_true_or_false_and_nothing_pydantic_would_read_as_one(tmp_path, value, shown):
    """pydantic alone reads one_shoe: 1, "yes" or "false" as a bool; a config that means something
    else (a count, a typo) is refused instead, naming the key, in every section."""
    assert _refused(tmp_path, f"one_shoe: {value}\nsystems: [{{type: flat}}]\n") == (
        f"c.yaml: one_shoe: Input should be true or false (got {shown})"
    )
    assert _refused(tmp_path, f"systems: [{{type: martingale, recovering: {value}}}]\n") == (
        f"c.yaml: systems.0.martingale.recovering: Input should be true or false (got {shown})"
    )
    import yaml

    from pb_gym.experiments import train as train_study

    train = yaml.safe_load((ROOT / "configs" / "train" / "ppo-smoke.yaml").read_text())
    train["evaluation"]["one_shoe"] = yaml.safe_load(value)
    assert _refused(tmp_path, yaml.safe_dump(train), train_study.TrainConfig) == (
        f"c.yaml: evaluation.one_shoe: Input should be true or false (got {shown})"
    )


def test_a_failed_whole_config_check_does_not_repeat_the_config(tmp_path):
    long_name = "n" * 5000
    message = _refused(
        tmp_path,
        f"name: {long_name}\nbankroll: 5\ntable: {{minimum: 10}}\nsystems: [{{type: flat, base: 10}}]\n",
    )
    assert message == "c.yaml: bankroll 5 is below the table minimum 10"
    message = _refused(tmp_path, f"sessions: {long_name}\nsystems: [{{type: flat}}]\n")
    assert len(message) < 300 and "(5000 characters)" in message


def test_files_that_are_not_configs_say_what_they_are(tmp_path):
    from pb_gym.experiments.common.yaml_config import ConfigError, load
    from pb_gym.experiments.evaluate import StudyConfig

    with pytest.raises(ConfigError, match=r": is a directory, not a config file$"):
        load(tmp_path, StudyConfig)
    with pytest.raises(ConfigError, match=r"nope.yaml: no such config file$"):
        load(tmp_path / "nope.yaml", StudyConfig)
    assert _refused(tmp_path, bytes(range(256))) == (
        "c.yaml: a binary file, not a YAML config (it contains NUL bytes)"
    )
    assert _refused(tmp_path, b"name: caf\xe9\n") == (
        "c.yaml: not UTF-8 text (byte 0xe9 at offset 9); a config is a YAML text file"
    )
    assert _refused(tmp_path, "# padding\n" * 120_000) == (
        "c.yaml: larger than 1024 KiB; a config is a short YAML text file"
    )


# ------------------------------------------------------------------- strict JSON reports (item 7)
def _strict_loads(text: str) -> object:
    import json

    def refuse(token: str) -> None:
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_strict_json_writes_null_and_says_why():
    from pb_gym import strict_json

    text = strict_json.dumps(
        {
            "mean": float("nan"),
            "ci": [np.float64(-np.inf), np.float32(0.5)],
            "n": np.int64(3),
            "flags": np.array([True, False]),
        }
    )
    assert _strict_loads(text) == {
        "mean": None,
        "ci": [None, 0.5],
        "n": 3,
        "flags": [True, False],
        "null_values": {"mean": strict_json.WHY["nan"], "ci.0": strict_json.WHY["-inf"]},
    }
    assert strict_json.dumps({"x": 1.0}) == '{"x": 1.0}'  # nothing to explain: no extra key
    with pytest.raises(TypeError, match=r"^a.b: set is not JSON serializable$"):
        strict_json.dumps({"a": {"b": {1}}})


def test_strict_json_takes_a_list_of_plain_finite_floats_whole_and_checks_any_other():
    from pb_gym import strict_json

    path = [1000.0, 990.0, -0.0, 1e300]
    assert strict_json.to_jsonable({"p": path}) == {"p": path} and strict_json.to_jsonable(path) is not path
    nulls: dict = {}
    assert strict_json.to_jsonable([1.0, float("inf"), True, 2], "p", nulls) == [1.0, None, True, 2]
    assert nulls == {"p.1": strict_json.WHY["inf"]}
    with pytest.raises(TypeError, match=r"^p.1: set is not JSON serializable$"):
        strict_json.to_jsonable([1.0, {1}], "p")


# ------------------------------------------------------- the command line: exit statuses (item 8)
PB_GYM = str(ROOT / ".venv" / "bin" / "pb-gym")


def _cli(*args: str, stdout=None, timeout: float = 120) -> tuple[int, str, str]:
    import subprocess

    done = subprocess.run(
        [PB_GYM, *args], stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout
    )
    return done.returncode, done.stdout or "", done.stderr


def test_cli_bad_input_is_one_line_and_status_2(tmp_path):
    status, _, err = _cli("odds", "--ranks", "4,4,4,4,4,4,4,4,4,4,4,4," + "9" * 5000)
    assert (
        status == 2
        and err.count("\n") == 1
        and err.startswith("pb-gym odds: error: --ranks: each count must be at most 1,000,000,000; got '4,4,")
    )
    for digit in ("\u0663", "\u00b2"):  # ARABIC-INDIC THREE, SUPERSCRIPT TWO: isdigit() but not ASCII
        status, _, err = _cli("odds", "--ranks", "4,4,4,4,4,4,4,4,4,4,4,4," + digit)
        assert status == 2 and "each a whole number >= 0 in ASCII digits" in err
    binary = tmp_path / "model.yaml"
    binary.write_bytes(bytes(range(256)))
    status, _, err = _cli("evaluate", str(binary))
    assert status == 2 and err == (
        f"pb-gym evaluate: error: invalid config: {binary}: a binary file, "
        "not a YAML config (it contains NUL bytes)\n"
    )
    status, _, err = _cli("evaluate", str(tmp_path))
    assert status == 2 and err.endswith(f"{tmp_path}: is a directory, not a config file\n")


def test_cli_too_large_a_run_is_refused_before_allocating():
    status, _, err = _cli("simulate", "--hands", "10", "--tables", "10000000000")
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("pb-gym simulate: error: simulate --tables 10,000,000,000 needs about ")
    assert err.endswith(
        "use fewer --tables (the tables dealt at once; --hands are dealt in rounds over them)\n"
    )
    with pytest.raises(
        ValueError,
        match=r"^a shoe state of 10,000,000,000 tables needs about "
        r"[0-9.]+ (GiB|e\+\d+ GiB) of memory but this machine has .* available; deal "
        r"fewer tables at once$",
    ):
        engine.init(Rules(), 10**10)
    with pytest.raises(
        ValueError,
        match=r"^PuntoBancoVectorEnv\(num_envs=10,000,000,000\) needs "
        r"about .* available; use fewer num_envs$",
    ):
        PuntoBancoVectorEnv(10**10)


def test_cli_environment_failures_are_status_1_and_one_line():
    import os
    import subprocess

    with open("/dev/full", "w") as full:
        status, _, err = _cli("odds", "--json", stdout=full)
    assert (status, err) == (1, "pb-gym: error: No space left on device\n")
    # the reader goes away before pb-gym writes (`pb-gym odds --json | head -c 0`): gone before it starts
    reader, writer = os.pipe()
    os.close(reader)
    process = subprocess.Popen([PB_GYM, "odds", "--json"], stdout=writer, stderr=subprocess.PIPE)
    os.close(writer)
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert err == "pb-gym: error: the output was closed before it was all written (broken pipe)\n"


# ------------------------------------------------------------ studies too large to hold (item 6)
def test_a_study_says_which_part_is_too_large_and_what_to_change(monkeypatch):
    from pb_gym import memory
    from pb_gym.experiments.common import scale

    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 30)  # 1 GiB available
    common = dict(item="session", items_key="sessions", chunk_key="chunk_sessions")
    with pytest.raises(memory.TooLarge) as caught:  # the running chunks
        scale.require_memory("s", 10**6, 10**6, working_per_item=2048, parallel=2, **common)
    assert str(caught.value) == (
        "s (1,000,000 sessions in chunks of 1,000,000) needs about 3.8 GiB of memory but this "
        "machine has 1.0 GiB available; lower `chunk_sessions` (a running chunk needs about 2.0 KiB "
        "per session, 2 chunks at once)"
    )
    with pytest.raises(
        memory.TooLarge,
        match=r"lower `sessions` \(the study keeps about 24 B for "
        r"every session until its report\)$",
    ):
        scale.require_memory("s", 10**9, 5000, working_per_item=1000, kept_per_item=24, **common)
    with pytest.raises(
        memory.TooLarge,
        match=r"raise `chunk_sessions` or lower `sessions` "
        r"\(10,000,000 chunks; each finished chunk is kept until the merge, about "
        r"2.0 KiB each\)$",
    ):
        scale.require_memory("s", 10**7, 1, working_per_item=1000, **common)
    scale.require_memory("s", 10**5, 5000, working_per_item=1000, kept_per_item=24, **common)


@pytest.mark.parametrize(
    "command, config, start, end",
    [
        # evaluate's memory is bounded by the chunk: a huge chunk is refused, not many sessions
        (
            ["evaluate"],
            "sessions: 1000000000\nchunk_sessions: 1000000000\nhands: 10\nsystems: [{type: flat}]\n",
            "pb-gym evaluate: error: the study 'study' (1,000,000,000 sessions in chunks of "
            "1,000,000,000) needs about ",
            "lower `chunk_sessions` (a running chunk needs about ",
        ),
        (
            ["experiment", "ruin"],
            "sessions: 1000000000000\n",
            "pb-gym experiment: error: the ruin study (",
            "raise `chunk_sessions` or lower `sessions` ",
        ),
        (
            ["experiment", "counting"],
            "shoes: 100000000000\n",
            "pb-gym experiment: error: the counting study (100,000,000,000 shoes in chunks of 2,500) ",
            "lower `shoes` ",
        ),
    ],
)
def test_cli_refuses_a_study_larger_than_the_machine(tmp_path, command, config, start, end):
    path = tmp_path / "big.yaml"
    path.write_text(config)
    status, _, err = _cli(*command, str(path), "--out", str(tmp_path / "out"))
    assert status == 2 and err.count("\n") == 1, err
    assert err.startswith(start) and (end in err), err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# ------------------------------------------------------------------ train hyperparameters (item 8)
@pytest.mark.parametrize(
    "edit, message",
    [
        (
            {"policy_kwargs": {"net_arch": [-32]}},
            "hyperparameters.policy_kwargs.net_arch: [-32] is not allowed; allowed: a list of layer sizes "
            "(integers >= 1), e.g. [64, 64], or {pi: [...], vf: [...]} (qf for DQN)",
        ),
        (
            {"policy_kwargs": {"net_arch": {"pi": [64], "vf": [0]}}},
            "hyperparameters.policy_kwargs.net_arch: {'pi': [64], 'vf': [0]} is not allowed",
        ),
        ({"n_epochs": -1}, "hyperparameters.n_epochs: -1 is not allowed; allowed: an integer >= 1"),
        ({"batch_size": 1.5}, "hyperparameters.batch_size: 1.5 is not allowed; allowed: an integer >= 1"),
        ({"gamma": 2}, "hyperparameters.gamma: 2 is not allowed; allowed: a number >= 0 and <= 1"),
        ({"learning_rate": 0}, "hyperparameters.learning_rate: 0 is not allowed; allowed: a number > 0"),
    ],
)
def test_train_refuses_hyperparameters_that_would_fail_deep_in_sb3(tmp_path, edit, message):
    import yaml

    from pb_gym.experiments.train import TrainConfig

    config = yaml.safe_load(open(ROOT / "configs" / "train" / "ppo-smoke.yaml"))
    config["hyperparameters"].update(edit)
    text = _refused(tmp_path, yaml.safe_dump(config), TrainConfig)
    assert text.startswith(f"c.yaml: {message}"), text


def test_yaml_values_python_cannot_build_are_config_errors(tmp_path):
    assert _refused(tmp_path, "systems: [{type: flat}]\nsessions: 1" + "0" * 5000 + "\n") == (
        "c.yaml: line 2: '1" + "0" * 59 + "'... (5001 characters) cannot be read: Exceeds the limit "
        "(4300 digits) for integer string conversion: value has 5001 digits"
    )
    assert _refused(tmp_path, "name: 2001-02-30\nsystems: [{type: flat}]\n") == (
        "c.yaml: line 1: '2001-02-30' cannot be read: day is out of range for month"
    )
