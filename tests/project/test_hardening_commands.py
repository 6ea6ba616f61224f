"""The commands' last rough edges: one output folder is one lock however it is spelled, a default is
checked like a value the user wrote, ``roads --png`` writes the file it names, ``score`` answers a
policy's failure (or a plain SB3 model) in one line, a user's name cannot drive the terminal, and a
YAML error is one line naming the file."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from pb_gym.experiments.common import outputs
from pb_gym.experiments.common.yaml_config import ConfigError, Strict, parse_yaml, validate
from pb_gym.progress import Progress, printable

import evaluate_reports

BUSY = "another pb-gym run is writing to this folder now; wait for it to finish, or choose another folder"


def _refused(argv: list[str], capsys) -> str:
    """The one line ``pb-gym`` answers ``argv`` with, after checking it exits with status 2 and prints
    nothing on stdout."""
    from pb_gym.experiments import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


# ----------------------------------------------------------------------------- the --out lock
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lock is Linux's abstract socket")
def test_one_output_folder_is_one_lock_however_it_is_spelled(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    held = outputs.prepare(real / "e", ["report.json"])
    assert held is not None
    try:
        for other in (tmp_path / "link" / "e", "/" + str(real / "e")):  # a symlinked parent; //tmp/...
            with pytest.raises(outputs.OutputError) as refused:
                outputs.prepare(other, ["report.json"])
            assert str(refused.value).endswith(BUSY)
            assert str(refused.value).count("\n") == 0
        assert outputs.prepare(real / "other", ["report.json"]) is not None  # a sibling is its own
    finally:
        outputs.release_all()
    assert outputs.prepare(tmp_path / "link" / "e", ["report.json"]) is not None  # once let go: free
    outputs.release_all()


# ------------------------------------------------------------------------ defaults and empty lists
def test_every_config_section_checks_its_defaults():
    assert Strict.model_config.get("validate_default") is True


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"vs_start": {"target": 10}},
            r"vs_start\.simulate: every starting bankroll must be in 1\.\.9 \(below the target 10\); "
            r"10 is not \(simulate was not given, and its default \[2, 5, 10, 15, 18\] does not fit",
        ),
        (
            {"vs_target": {"start": 50, "max_target": 200}},
            r"vs_target\.simulate: every target must be in 51\.\.200 .*12 is not \(simulate was not given",
        ),
        ({"vs_start": {"target": 10, "simulate": []}}, r"vs_start\.simulate: Tuple should have at least 1"),
        ({"vs_target": {"simulate": []}}, r"vs_target\.simulate: Tuple should have at least 1"),
    ],
)
def test_ruin_refuses_a_default_that_does_not_fit_and_an_empty_list(data, message):
    from pb_gym.experiments.ruin import RuinConfig

    with pytest.raises(ConfigError, match=message) as refused:
        validate(data, RuinConfig, "ruin.yaml")
    assert str(refused.value).count("\n") == 0


@pytest.mark.parametrize(
    ("module", "model", "data", "message"),
    [
        ("procedures", "ProceduresConfig", {"procedures": []}, r"procedures: Tuple should have at least 1"),
        ("procedures", "ProceduresConfig", {"bets": []}, r"bets: an empty list is not allowed; allowed: all"),
        ("leaks", "LeaksConfig", {"leaks": []}, r"leaks: Tuple should have at least 1"),
    ],
)
def test_an_empty_list_the_study_cannot_run_is_refused(module, model, data, message):
    config = getattr(importlib.import_module(f"pb_gym.experiments.{module}"), model)
    with pytest.raises(ConfigError, match=message):
        validate(data, config, "study.yaml")


# ---------------------------------------------------------------------------------- roads --png
@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("", r"--png '' is not allowed; allowed: a PNG file path"),
        ("{tmp}", r"--png {tmp}: is a folder; allowed"),
        ("{tmp}/", r"--png {tmp}/: is a folder; allowed"),
        ("/dev/null", r"--png /dev/null: is not a regular file \(a device, a pipe or a socket\); allowed"),
        ("{tmp}/board.jpg", r"--png {tmp}/board.jpg: the suffix \.jpg is not allowed; allowed"),
        (
            "{tmp}/missing/board.png",
            r"--png {tmp}/missing/board.png: the folder {tmp}/missing does not exist",
        ),
    ],
)
def test_roads_png_refuses_what_it_cannot_write_as_named(tmp_path, capsys, given, problem):
    import re

    tmp = str(tmp_path)
    line = _refused(["roads", "BPPB", "--png", given.format(tmp=tmp)], capsys)
    assert re.fullmatch(r"pb-gym roads: error: " + problem.replace("{tmp}", re.escape(tmp)) + ".*", line)
    assert not any(p.suffix == ".png" for p in tmp_path.rglob("*"))  # nothing written beside it


def test_roads_png_says_the_file_it_wrote(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from pb_gym.experiments import cli

    assert cli.main(["roads", "BPPB", "--png", str(tmp_path / "board")]) == 0
    assert f"scoreboard drawn in {tmp_path / 'board.png'}" in capsys.readouterr().out.splitlines()
    assert (tmp_path / "board.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------- score
POLICIES = """
import numpy as np
def good(obs): return np.zeros(len(obs), dtype=np.int64)
def two(obs, extra): return good(obs)
def boom(obs): raise RuntimeError("no\\nway \\x1b[2J")
def leave(obs): raise SystemExit(0)
"""


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        (".hardening_policies:good", r"a relative module name \('\.hardening_policies'\) is not allowed"),
        ("hardening_policies:two", r"failed when called with .*\(TypeError: two\(\) missing 1 required"),
        ("hardening_policies:boom", r"failed when called with .*\(RuntimeError: no way \\x1b\[2J\)"),
        ("hardening_policies:leave", r"failed when called with .*\(it called exit\(0\)\)"),
        (
            "hardening_exits:f",
            r"module 'hardening_exits' failed while it was imported \(it called exit\(0\)\)",
        ),
    ],
)
def test_score_answers_a_policys_failure_in_one_line(tmp_path, monkeypatch, capsys, policy, problem):
    import re

    (tmp_path / "hardening_policies.py").write_text(POLICIES)
    (tmp_path / "hardening_exits.py").write_text("raise SystemExit(0)\n")
    monkeypatch.chdir(tmp_path)
    importlib.invalidate_caches()
    for name in ("hardening_policies", "hardening_exits"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    line = _refused(["score", policy, "--tables", "2", "--hands", "2", "--json"], capsys)
    assert re.match(rf"pb-gym score: error: policy '{re.escape(policy)}'", line)
    assert re.search(problem, line), line


def test_score_scores_a_plain_sb3_model_on_the_task_given(tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    import gymnasium
    from stable_baselines3 import PPO

    from pb_gym import benchmark
    from pb_gym.experiments import cli

    model = PPO(
        "MlpPolicy", gymnasium.make("pb_gym/Discover-v0"), n_steps=32, batch_size=32, n_epochs=1, seed=0
    )
    model.learn(32)
    model.save(tmp_path / "plain")  # SB3's own save: plain.zip, no env.json
    argv = ["score", str(tmp_path / "plain.zip"), "--tables", "4", "--hands", "20", "--seed", "5"]
    assert cli.main([*argv, "--task", "Discover-v0", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    direct = benchmark.score(
        lambda obs: model.predict(obs, deterministic=True)[0], "Discover-v0", tables=4, hands=20, seed=5
    )
    assert printed["exact_profit_per_hand"] == direct["exact_profit_per_hand"]
    assert printed["bet_rate"] == direct["bet_rate"]
    line = _refused([*argv, "--task", "DiscoverCatalog-v0"], capsys)
    assert "a model with no env.json beside it is scored as trained on --task's own env" in line
    assert "pb_gym/DiscoverCatalog-v0's differs (action space: model Discrete(6), task Discrete(7))" in line


def test_benchmark_score_names_its_tables_when_they_do_not_fit(monkeypatch):
    from pb_gym import benchmark, memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 30)
    with pytest.raises(
        memory.TooLarge, match=r"^dealing 10,000,000 held-out tables at once needs about"
    ) as e:
        benchmark.score(lambda obs: [0] * len(obs), "Discover-v0", tables=10_000_000, hands=1)
    assert str(e.value).endswith("; use fewer tables") and "num_envs" not in str(e.value)


# ------------------------------------------------------------------------- names on a terminal
def test_printable_escapes_what_would_drive_the_terminal():
    assert printable("classic é") == "classic é"
    assert printable("a\x1b[2Jb\x07c\u202ed\ne") == "a\\x1b[2Jb\\x07c\\u202ed\\ne"


def test_evaluates_printed_lines_escape_the_names_and_the_files_keep_them(capsys):
    from pb_gym.experiments.evaluate import report as evaluate_report

    system = evaluate_reports.system_row(
        "x\x1b[31my", float("nan"), [float("nan"), float("nan")], -0.0106, hands=0
    )
    report = evaluate_reports.report([system], name="a\x1b[2Jb\x07\u202ec", sessions=20, hands_per_session=20)
    evaluate_report.print_report(report)
    out = capsys.readouterr().out
    assert out.startswith("a\\x1b[2Jb\\x07\\u202ec: 20 sessions")
    assert "x\\x1b[31my" in out and "NOTE: x\\x1b[31my placed no bet" in out
    assert all(c.isprintable() for line in out.splitlines() for c in line)
    assert report["name"] == "a\x1b[2Jb\x07\u202ec" and system["name"] == "x\x1b[31my"  # data exact


def test_a_progress_line_escapes_its_label():
    import io

    stream = io.StringIO()
    tracker = Progress("a\x1b[2Jb", total=10, stream=stream, bar=False, enabled=True)
    tracker.close()
    assert tracker.line().startswith("a\\x1b[2Jb: ")


# --------------------------------------------------------------------------------- YAML, --known
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nsessions: !foo 3\n", r"study\.yaml: line 2, column 11: the tag '!foo' is not allowed"),
        (
            "name: x\nsessions: !!python/name:os.system 3\n",
            r"study\.yaml: line 2, column 11: the tag 'tag:yaml\.org,2002:python/name:os\.system' is not",
        ),
        (
            "name: [x\n",
            r"study\.yaml: line 2, column 1: not valid YAML: expected ',' or '\]', but got '<stream end>' "
            r"\(while parsing a flow sequence that begins on line 1, column 7\)",
        ),
        ('name: ok\nx: "a\x07"\n', r"study\.yaml: line 2, column 6: not valid YAML: the character U\+0007"),
    ],
)
def test_a_yaml_error_is_one_line_naming_the_file_and_the_line(text, message):
    with pytest.raises(ConfigError, match=message) as refused:
        parse_yaml(text, "study.yaml")
    assert "\n" not in str(refused.value) and "<unicode string>" not in str(refused.value)


def test_known_given_twice_for_a_position_is_refused_not_kept_last(capsys):
    line = _refused(["odds", "--known", "1=9", "--known", "1=8"], capsys)
    assert line.startswith("pb-gym odds: error: --known: position 1 given twice; allowed: POS=RANKS")


def test_known_cards_that_cannot_be_dealt_name_the_option_once(capsys):
    aces_gone = ",".join(["0"] + ["4"] * 12)
    line = _refused(["odds", "--ranks", aces_gone, "--known", "1=A"], capsys)
    assert (
        line
        == "pb-gym odds: error: --known: these cards cannot be dealt from the composition (probability 0)"
    )
