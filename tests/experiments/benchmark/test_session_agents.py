"""examples/session_agents.py: learned agents on a session task, each run scored exactly."""

import csv
import json
import subprocess
import sys

import pytest

from repo_paths import ROOT  # noqa: E402

pytest.importorskip("stable_baselines3")


def test_a_run_is_trained_scored_exactly_and_summarized(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "session_agents.py"), "--algos", "ppo", "--seeds", "0",
         "--timesteps", "2048", "--workers", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = list(csv.DictReader(open(out / "runs.csv")))
    assert (run["algo"], run["seed"], run["timesteps"]) == ("ppo", "0", "2048")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["optimum_p_goal"] == pytest.approx(0.282916417064592, abs=1e-14)
    ppo = summary["algorithms"]["ppo"]
    # one run: its exact score is the IQM, the mean and both ends of the interval
    assert (
        ppo["iqm"]
        == ppo["mean"]
        == float(run["normalized_score"])
        == pytest.approx(float(run["p_goal"]) / summary["optimum_p_goal"], rel=1e-12)
    )
    assert ppo["iqm_ci95"] == [ppo["iqm"], ppo["iqm"]] and 0 <= ppo["iqm"] <= 1
    assert summary["references"]["bold play, player"] == pytest.approx(0.111587908386914 / 0.282916417064592)
    assert "| ppo | 1 |" in (out / "summary.md").read_text()
