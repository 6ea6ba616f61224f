"""A command whose extra is not installed says, in one line and status 2, which extra and how to install
it (the learned agents' ``rl`` extra: ``pb-gym train``, a ``type: sb3`` system of ``pb-gym evaluate``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from pb_gym.agents import learned
from pb_gym.experiments import cli

from repo_paths import ROOT  # noqa: E402

INSTALL = "pip install -e '.[rl]' -c constraints.txt"


def _evaluate_config(tmp_path: Path) -> Path:
    """A study with a ``type: sb3`` system (a model's files, never loaded: the check comes first)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / learned.MODEL_FILE).write_bytes(b"not read")
    (model / learned.ENV_FILE).write_text(json.dumps({"env_kwargs": {}}))
    config = yaml.safe_load((ROOT / "configs" / "systems" / "smoke.yaml").read_text())
    config["systems"] = [{"type": "flat"}, {"type": "sb3", "model": str(model)}]
    path = tmp_path / "learned.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_a_missing_rl_extra_is_one_line_naming_it_and_status_2(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # (what a missing package reads as)
    config = (
        ROOT / "configs" / "train" / "ppo-smoke.yaml" if command == "train" else _evaluate_config(tmp_path)
    )
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, str(config), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"pb-gym {command}: error: ") and "Traceback" not in err
    assert "needs the rl extra" in err and INSTALL in err
    assert not (tmp_path / "out").exists()  # refused before any work


def test_the_learned_agents_name_the_extra_where_they_import_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)
    with pytest.raises(learned.MissingExtra, match=r"the MaskablePPO algorithm needs the rl extra .*\[rl\]"):
        learned.algorithm_class("MaskablePPO")
    with pytest.raises(ValueError, match="allowed: PPO"):
        learned.algorithm_class("SAC")
