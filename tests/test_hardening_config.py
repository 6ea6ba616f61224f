"""Hostile config text and environment: every command answers with one line and exit 2, never a
traceback (a recursive alias, YAML 1.1's base-60/hex/octal numbers, bad thread counts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pb_gym.experiments import cli
from pb_gym.experiments.config import ConfigError, parse_yaml

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("argv", [["evaluate"], ["train"], ["experiment", "counting"],
                                  ["experiment", "ruin"], ["experiment", "atlas"]])
def test_a_recursive_alias_is_a_config_error_in_every_command(tmp_path, capsys, argv):
    path = tmp_path / "c.yaml"
    path.write_text("systems: &a [*a]\n")
    with pytest.raises(SystemExit) as caught:
        cli.main([*argv, str(path), "--out", str(tmp_path / "out")])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ("line 1: the alias *a is inside the list or mapping &a names (a recursive alias: it "
            "would never end)") in err


@pytest.mark.parametrize("text,value", [("seed: 1:30", "'1:30'"), ("seed: 0x1F", "'0x1F'"),
                                        ("seed: 017", "'017'"),
                                        ("seed: 0b11", "'0b11'"), ("bankroll: 1:30.5", "'1:30.5'"),
                                        ("systems: [0x10]", "'0x10'")])
def test_yaml_numbers_a_config_never_means_are_refused_naming_the_key(text, value):
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text + "\n", "c.yaml")
    message = str(caught.value)
    assert message.startswith(f"c.yaml: line 1: {value} is read by YAML as a base-60, hex, octal or "
                              "binary number; write it in decimal, or quote it for a string")
    if not text.startswith("systems"):
        assert message.endswith(f"(key {text.split(':')[0]!r})")


def test_decimal_numbers_and_aliases_still_load():
    assert parse_yaml("seed: 12\nn: 1_000\nx: -3\ny: 0\nz: 1.5e+3\na: &b [1]\nc: *b\n") == {
        "seed": 12, "n": 1000, "x": -3, "y": 0, "z": 1500.0, "a": [1], "c": [1]}


@pytest.mark.parametrize("name,value", [("PB_GYM_NUM_THREADS", "abc"), ("PB_GYM_NUM_THREADS", "0"),
                                        ("NUMBA_NUM_THREADS", "0"), ("NUMBA_NUM_THREADS", "abc"),
                                        ("PB_GYM_NUM_THREADS", "100000")])
def test_a_bad_thread_count_in_the_environment_is_one_line_exit_2(name, value):
    env = {**os.environ, "PYTHONPATH": str(ROOT), name: value}
    done = subprocess.run([sys.executable, "-m", "pb_gym.experiments.cli", "odds", "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"pb-gym: error: {name}={value!r} is not allowed; allowed: an "
                                  "integer from 1 to ")
    assert done.stderr.count("\n") == 1 and not done.stdout
