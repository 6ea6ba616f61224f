"""Output folders and model files a hostile or unlucky user hands the commands: each is refused before
the run with one line and exit 2, never a traceback, a chunk that fails twice or a ResourceWarning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pb_gym.experiments.common import outputs
from pb_gym.experiments.common.outputs import OutputError

from repo_paths import run_python  # noqa: E402

TINY = """name: tiny
rules: {decks: 8, side_bets: []}
table: {unit: 10, minimum: 10, maximum: 5000}
bankroll: 1000
sessions: 4
hands: 5
seed: 3
systems:
  - {type: flat, bet: banker}
"""


def _cli(*argv: str, cwd: Path):
    return run_python("-X", "dev", "-m", "pb_gym.experiments.cli", *argv, cwd=cwd)


# ------------------------------------------------------------------------------------ output folders
@pytest.mark.parametrize("inside", ["", "sub"])
def test_an_out_that_is_a_symlink_loop_is_named(tmp_path, inside):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OutputError, match=r"symlink loop"):
        outputs.prepare(tmp_path / "a" / inside if inside else tmp_path / "a", ["report.json"])


def test_a_folder_refused_after_it_was_taken_is_let_go(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep")
    with pytest.raises(OutputError, match=r"does not write \(mine.txt\)"):
        outputs.prepare(tmp_path / "busy", ["report.json"])
    assert tmp_path / "busy" not in outputs._LOCKS
    outputs.lock(tmp_path / "busy")  # another run may take it at once
    outputs.release(tmp_path / "busy")


def test_the_name_probe_is_as_long_as_the_staging_folder(tmp_path):
    """A name that fits alone but not with the staging folder's prefix is refused up front, with the
    longest name that fits; that longest one works all the way to the outputs in place."""
    longest = outputs._longest_name(tmp_path)
    with pytest.raises(OutputError, match=rf"too long .*at most {longest} characters"):
        outputs.prepare(tmp_path / ("a" * (longest + 1)), ["report.json"])
    with pytest.raises(OutputError, match=rf"too long .*at most {longest} characters"):
        outputs.prepare(tmp_path / ("a" * 300), ["report.json"])
    destination = outputs.prepare(tmp_path / ("a" * longest), ["report.json"])
    assert destination is not None
    with destination.staging() as staged:
        (staged / "report.json").write_text("{}")
    assert (tmp_path / ("a" * longest) / "report.json").read_text() == "{}"


def test_a_refused_or_failed_run_leaves_no_unclosed_socket(tmp_path):
    """The output folder's lock is closed at exit, whether the run finished or was refused after
    taking it (python -X dev shows every ResourceWarning)."""
    (tmp_path / "tiny.yaml").write_text(TINY)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep")
    refused = _cli("evaluate", "tiny.yaml", "--out", "busy", cwd=tmp_path)
    assert refused.returncode == 2 and "does not write (mine.txt)" in refused.stderr
    assert "ResourceWarning" not in refused.stderr
    done = _cli("evaluate", "tiny.yaml", "--out", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ResourceWarning" not in done.stderr


# --------------------------------------------------------------------------------------- model files
@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """An untrained PPO model saved as pb-gym train saves one (the checks read its files only)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from pb_gym.agents import learned
    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    folder = tmp_path_factory.mktemp("model")
    kwargs = dict(
        decks=8, table_min=10.0, table_max=5000.0, unit=10.0, bankroll=1000.0, history=20,
        action_mode="multidiscrete", observation="dict", stake_levels=(1, 2, 5),
    )  # fmt: skip
    env = PuntoBancoSB3VecEnv(2, **kwargs)
    learned.save_policy(PPO("MultiInputPolicy", env, n_steps=8, batch_size=16), folder, kwargs, "PPO")
    return folder


def _edited(model: Path, tmp_path: Path, edit) -> Path:
    folder = tmp_path / "edited"
    folder.mkdir()
    for name in ("model.zip", "env.json"):
        (folder / name).write_bytes((model / name).read_bytes())
    meta = json.loads((model / "env.json").read_text())
    text = edit(meta)
    (folder / "env.json").write_text(text if isinstance(text, str) else json.dumps(meta))
    return folder


def _set(key, value):
    def edit(meta):
        meta["env_kwargs"][key] = value

    return edit


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda meta: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (lambda meta: meta.pop("env_kwargs"), "env_kwargs is missing"),
        (lambda meta: meta.update(env_kwargs=[1]), r"env_kwargs is \[1\]"),
        (lambda meta: meta.update(algorithm="SAC"), "algorithm 'SAC' is not allowed"),
        (lambda meta: meta.update(obs_transform=3), "obs_transform 3 is not allowed"),
        (lambda meta: meta.update(vecnormalize="../x.pkl"), "vecnormalize '../x.pkl' is not allowed"),
        (_set("history", "x"), "history='x' is not allowed"),
        (_set("no_such_setting", 1), "no_such_setting"),
        (_set("history", 5), r"observation space .*bead_plate: model Box\(20,\), env.json Box\(5,\)"),
        (
            _set("stake_levels", [1, 2]),
            r"action space .*model MultiDiscrete\[8, 3\], env.json MultiDiscrete\[8, 2",
        ),
        (_set("visible_discards", False), r"observation space .*shoe: model only"),
        (_set("observation", "flat"), r"observation space .*model \{.*env.json Box"),
        (_set("side_bets", ["dragon7"]), r"action space"),
        (lambda meta: meta.update(algorithm="DQN"), r"says algorithm 'DQN', but .*PPO or A2C"),
    ],
)
def test_a_model_file_not_as_pb_gym_train_wrote_it_is_refused_naming_it(model, tmp_path, edit, problem):
    from pb_gym.agents import learned

    with pytest.raises(ValueError, match=problem):
        learned.training_config(_edited(model, tmp_path, edit))


def test_a_mismatched_model_is_a_config_error_before_the_run(model, tmp_path):
    folder = _edited(model, tmp_path, _set("history", 5))
    study = TINY.replace("{type: flat, bet: banker}", f"{{type: sb3, model: {folder}}}")
    (tmp_path / "study.yaml").write_text(study)
    result = _cli("evaluate", "study.yaml", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "bead_plate: model Box(20,), env.json Box(5,)" in result.stderr
    assert "chunk" not in result.stderr and not (tmp_path / "out").exists()


def test_the_model_as_saved_still_loads(model):
    from pb_gym.agents import learned

    assert learned.training_config(model).history == 20
    assert learned.read_meta(model / "env.json")["algorithm"] == "PPO"
