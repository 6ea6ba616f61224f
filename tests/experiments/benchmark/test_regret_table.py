"""The regret table over training seeds (``pb-gym experiment benchmark``): rliable's aggregate (IQM and
its stratified bootstrap interval) against hand-computed values and a coverage check, the study at
tiny budgets (configs/benchmark/discover-smoke.yaml), and its runs kept per seed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from pb_gym.experiments.common import stats

from repo_paths import ROOT  # noqa: E402


# ------------------------------------------------------------------------------- IQM and bootstrap
def test_iqm_is_the_mean_of_the_middle_half():
    assert stats.iqm([5, 1, 4, 2, 3]) == 3.0  # five runs: the middle three
    assert stats.iqm([0.0, 1.0, 2.0, 3.0, 100.0]) == 2.0  # an outlying run does not move it
    assert stats.iqm(np.arange(1, 9)) == 4.5  # eight: 3, 4, 5, 6
    assert stats.iqm([7.0]) == 7.0
    assert stats.iqm([1.0, 2.0, 4.0]) == pytest.approx(7 / 3)  # under four runs nothing is cut
    assert stats.iqm([[1.0, 9.0], [2.0, 3.0]]) == 2.5  # every value of a (runs, tasks) matrix
    for bad in ([], [1.0, np.nan]):
        with pytest.raises(ValueError, match="at least one value, every one finite"):
            stats.iqm(bad)


def test_the_vectorized_iqm_is_iqm_to_the_last_bit():
    rows = np.random.default_rng(3).normal(size=(200, 7))
    assert np.array_equal(stats._iqm_rows(rows), [stats.iqm(r) for r in rows])


def test_the_bootstrap_draws_within_each_task():
    # every replicate draws 4 runs of each task: the pooled IQM of four 0s and four 1s is always 0.5,
    # where a bootstrap over the pooled runs would vary
    assert stats.stratified_bootstrap_ci({"a": np.zeros(4), "b": np.ones(4)}, reps=500) == [0.5, 0.5]
    assert stats.stratified_bootstrap_ci(np.full(5, 0.25), reps=100) == [0.25, 0.25]
    scores = np.array([0.91, 0.95, 0.93, 0.97, 0.60])
    low, high = stats.stratified_bootstrap_ci(scores, reps=20_000, seed=1)
    assert low < stats.iqm(scores) < high and 0.60 <= low and high <= 0.97
    assert stats.stratified_bootstrap_ci(scores, reps=20_000, seed=1) == [low, high]  # seeded
    for kwargs, message in (
        ({"scores": {"a": []}}, "every task needs at least one run"),
        ({"scores": scores, "reps": 0}, r"reps=0 is not allowed; allowed: an integer >= 1"),
        ({"scores": scores, "confidence": 1.0}, r"confidence=1.0 is not allowed"),
    ):
        with pytest.raises(ValueError, match=message):
            stats.stratified_bootstrap_ci(**kwargs)


def test_the_bootstrap_interval_covers_the_iqm_about_as_often_as_it_says():
    # 300 samples of 20 runs from N(0.9, 0.05^2) (whose IQM is its mean, 0.9): a 90% percentile
    # interval covers it with probability about 0.88 at this size; 300 trials put the share within
    # +-0.06 of it with 99.9% confidence (binomial sd 0.019)
    rng = np.random.default_rng(11)
    covered = sum(
        low <= 0.9 <= high
        for low, high in (
            stats.stratified_bootstrap_ci(rng.normal(0.9, 0.05, 20), reps=2000, confidence=0.9, seed=k)
            for k in range(300)
        )
    )
    assert 0.80 <= covered / 300 <= 0.95, covered


# ---------------------------------------------------------------------------------- the study
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """configs/benchmark/discover-smoke.yaml: five algorithms x two seeds at 4,096 hands each."""
    from pb_gym.experiments.benchmark import regret_table as RT

    out = tmp_path_factory.mktemp("benchmark") / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # (the train configs' paths are the repository's)
        result = RT.main("configs/benchmark/discover-smoke.yaml", out=str(out), as_json=True)
    return result, out


def test_the_smoke_study_trains_and_scores_every_algorithm_and_seed(smoke):
    from pb_gym import benchmark as B

    result, out = smoke
    names = ["PPO", "A2C", "DQN", "MaskablePPO", "RecurrentPPO"]
    assert list(result["algorithms"]) == names
    assert [(r["algorithm"], r["seed"]) for r in result["runs"]] == [(n, s) for n in names for s in (0, 1)]
    for r in result["runs"]:
        assert r["timesteps"] == 4096 and r["training_seconds"] > 0 and r["training_cpu_seconds"] > 0
        # every run is scored by benchmark.score on the same held-out hands: one perfect bettor
        assert r["score"]["task"] == "pb_gym/Discover-v0" and r["score"]["hands"] == 16 * 100
        assert r["score"]["perfect_profit_per_hand"] == result["perfect_profit_per_hand"]
        share = r["score"]["normalized_score"]["estimate"]
        assert r["score"]["exact_profit_per_hand"]["estimate"] == pytest.approx(
            share * result["perfect_profit_per_hand"]["estimate"], rel=1e-9
        )
        # the exact learning curve: the initial policy, then 2 points, against training seconds
        curve = r["curve"]
        assert [p["timesteps"] for p in curve][0] == 0 and curve[-1]["timesteps"] == 4096
        seconds = [p["training_seconds"] for p in curve]
        assert seconds == sorted(seconds) and 0 <= seconds[0] < seconds[-1] <= r["training_seconds"] + 1e-6
    for name, entry in result["algorithms"].items():
        runs = [r for r in result["runs"] if r["algorithm"] == name]
        values = [r["score"]["normalized_score"]["estimate"] for r in runs]
        assert entry["runs"] == 2 and entry["normalized_score"]["values"] == values
        assert entry["normalized_score"]["iqm"] == stats.iqm(values)
        low, high = entry["normalized_score"]["ci"]
        assert min(values) <= low <= entry["normalized_score"]["iqm"] <= high <= max(values)
        regret = [r["score"]["regret_per_hand"]["estimate"] for r in runs]
        assert entry["regret_per_hand"]["iqm"] == stats.iqm(regret)
        assert entry["training_seconds"]["values"] == [r["training_seconds"] for r in runs]
        cpu = [r["training_cpu_seconds"] for r in runs]
        assert entry["training_cpu_seconds"] == {"median": float(np.median(cpu)), "values": cpu}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["benchmark.json", "benchmark.md", "benchmark.csv", "benchmark.txt", "curves.png"]
    )
    table = (out / "benchmark.md").read_text()
    for name in names:
        assert f"| {name} | 2 | " in table
    with open(out / "benchmark.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 10 and float(rows[0]["normalized_score"]) == values_of(result, "PPO")[0]
    assert json.loads((out / "benchmark.json").read_text())["algorithms"]["DQN"]["runs"] == 2
    # the perfect bettor, scored the same way, would sit at 1 (benchmark.score's own test): the
    # smoke policies are far below it after 4,096 hands
    assert B.DEFAULT_SEED == result["held_out"]["seed"]


def values_of(result: dict, name: str) -> list[float]:
    return result["algorithms"][name]["normalized_score"]["values"]


def _small_config(path: Path, seeds: list[int]) -> str:
    smoke = yaml.safe_load((ROOT / "configs" / "benchmark" / "discover-smoke.yaml").read_text())
    smoke["seeds"] = seeds
    smoke["algorithms"] = [
        dict(a, train=str(ROOT / a["train"])) for a in smoke["algorithms"] if a["name"] in ("PPO", "A2C")
    ]
    path.write_text(yaml.safe_dump(smoke))
    return str(path)


def test_runs_are_kept_per_seed_and_a_study_with_more_seeds_trains_only_those(tmp_path, monkeypatch):
    from pb_gym.experiments.benchmark import regret_table as RT
    from pb_gym.experiments.common.scale import ChunkError

    out = tmp_path / "out"
    trained: list[tuple[str, int]] = []
    real = RT.train_and_score

    def counted(chunk, runs, **kwargs):
        run = runs[chunk.index]
        if run["seed"] == 1 and run["algorithm"] == "A2C" and stop:
            raise RuntimeError("stopped")
        trained.append((run["algorithm"], run["seed"]))
        return real(chunk, runs, **kwargs)

    monkeypatch.setattr(RT, "train_and_score", counted)
    stop = True
    with pytest.raises(ChunkError):
        RT.main(_small_config(tmp_path / "a.yaml", [0, 1]), out=str(out), as_json=True)
    # seed-major: both algorithms' seed 0, then PPO's seed 1, kept as each finished
    assert trained == [("PPO", 0), ("A2C", 0), ("PPO", 1)]
    stop, trained[:] = False, []
    result = RT.main(_small_config(tmp_path / "b.yaml", [0, 1, 2]), out=str(out), as_json=True)
    assert trained == [("A2C", 1), ("PPO", 2), ("A2C", 2)]
    assert result["timings"]["runs_trained"] == 3 and result["algorithms"]["PPO"]["runs"] == 3


def test_a_train_config_for_another_table_is_refused_before_training(tmp_path):
    from pb_gym.experiments.benchmark import regret_table as RT
    from pb_gym.experiments.common.yaml_config import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "seeds": [0],
                "algorithms": [
                    {
                        "name": "PPO",
                        "train": str(ROOT / "configs/train/discover-fast.yaml"),
                        "set": {"env": {"visible_discards": False}},
                    }
                ],
            }
        )
    )
    with pytest.raises(
        ConfigError, match=r"algorithms: PPO: .*trained on another table than pb_gym/Discover-v0's"
    ):
        RT.main(str(path), as_json=True)
    path.write_text(yaml.safe_dump({"seeds": [0, 0], "algorithms": [{"name": "PPO", "train": "x.yaml"}]}))
    with pytest.raises(ConfigError, match=r"seeds.*distinct integers >= 0"):
        RT.main(str(path), as_json=True)
    path.write_text(yaml.safe_dump({"algorithms": [{"name": "PPO", "train": str(tmp_path / "none.yaml")}]}))
    with pytest.raises(ConfigError, match=r"algorithms: PPO: .*none.yaml"):
        RT.main(str(path), as_json=True)


# ------------------------------------------------------------------------------- recorded rows
RECORDED = ROOT / "docs" / "benchmark" / "discover-4-seeds.csv"


def _recorded_config(path: Path, seeds: list[int], recorded: list[str]) -> str:
    full = yaml.safe_load((ROOT / "configs" / "benchmark" / "discover.yaml").read_text())
    full.update(
        seeds=seeds,
        recorded=recorded,
        algorithms=[dict(a, train=str(ROOT / a["train"])) for a in full["algorithms"]],
    )
    path.write_text(yaml.safe_dump(full))
    return str(path)


def test_recorded_rows_are_aggregated_without_training_and_written_back_as_read(tmp_path, monkeypatch):
    from pb_gym.experiments.benchmark import regret_table as RT

    def refused(*args, **kwargs):
        raise AssertionError("a recorded run was trained")

    monkeypatch.setattr(RT, "train_and_score", refused)
    config = _recorded_config(tmp_path / "r.yaml", [0, 1, 2, 3], [str(RECORDED)])
    result = RT.main(config, out=str(tmp_path / "out"), as_json=True)
    with open(RECORDED, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert result["timings"] == {**result["timings"], "runs_trained": 0, "runs_recorded": 20}
    for name in ("PPO", "A2C", "DQN", "MaskablePPO", "RecurrentPPO"):
        mine = [float(r["normalized_score"]) for r in rows if r["algorithm"] == name]
        entry = result["algorithms"][name]["normalized_score"]
        # four runs: the IQM is the mean of the middle two
        assert entry["iqm"] == pytest.approx(np.mean(sorted(mine)[1:3]), abs=1e-15)
        assert entry["ci"] == stats.stratified_bootstrap_ci(np.array(mine), reps=50_000, seed=0)
        gap = result["algorithms"][name]["optimality_gap"]
        assert gap["estimate"] == pytest.approx(np.mean(1 - np.minimum(mine, 1.0)), abs=1e-15)
        assert gap["ci"] == stats.stratified_bootstrap_ci(np.array(mine), stats.optimality_gap, reps=50_000)
        profile = result["algorithms"][name]["performance_profile"]
        assert profile["share_above"] == [np.mean(np.array(mine) > tau) for tau in profile["taus"]]
    ppo = [float(r["normalized_score"]) for r in rows if r["algorithm"] == "PPO"]
    dqn = [float(r["normalized_score"]) for r in rows if r["algorithm"] == "DQN"]
    pairs = [(a, b) for a in ppo for b in dqn]
    assert result["probability_of_improvement"]["PPO > DQN"]["estimate"] == pytest.approx(
        np.mean([(a > b) + 0.5 * (a == b) for a, b in pairs]), abs=1e-15
    )
    assert len(result["probability_of_improvement"]) == 5 * 4  # every ordered pair of the five
    # the recorded PPO row's table entry as the 4-seed table printed it, its optimality gap beside it
    gap = result["algorithms"]["PPO"]["optimality_gap"]
    shown = f"{gap['estimate']:.3f} [{gap['ci'][0]:.3f}, {gap['ci'][1]:.3f}]"
    assert f"| PPO | 4 | 0.950 [0.948, 0.951] | {shown} | 0.46 [0.45, 0.48] |" in RT.table(result)
    assert "Probability of improvement (rliable; 0.5: neither is better): P(PPO > A2C)" in RT.table(result)
    assert "20 of the 20 runs are recorded rows" in RT.table(result)
    assert "| n/a | | | |" in RT.table(result)  # (the old rows lack the perfect bettor's bet rate)
    with open(tmp_path / "out" / "benchmark.csv", newline="") as handle:
        written = list(csv.DictReader(handle))
    keys = [k for k in rows[0] if k != "timesteps"]
    assert [{k: float(r[k]) if k not in ("algorithm", "seed") else r[k] for k in keys} for r in written] == [
        {k: float(r[k]) if k not in ("algorithm", "seed") else r[k] for k in keys} for r in rows
    ]
    assert all(r["training_cpu_seconds"] == "" for r in written)


def test_bad_recorded_files_are_refused_with_the_file_and_the_reason(tmp_path):
    from pb_gym.experiments.benchmark import regret_table as RT
    from pb_gym.experiments.common.yaml_config import ConfigError

    text = RECORDED.read_text().splitlines()
    (tmp_path / "twice.csv").write_text("\n".join([text[0], text[1], text[1]]) + "\n")
    with pytest.raises(ConfigError, match=r"twice.csv: line 3: PPO seed 0 is recorded twice"):
        RT.recorded_runs([str(tmp_path / "twice.csv")])
    header = text[0].replace("regret_per_hand,", "")
    body = [",".join(v for i, v in enumerate(line.split(",")) if i != 7) for line in text[1:3]]
    (tmp_path / "short.csv").write_text("\n".join([header, *body]) + "\n")
    with pytest.raises(ConfigError, match=r"short.csv: has no column regret_per_hand"):
        RT.recorded_runs([str(tmp_path / "short.csv")])
    with pytest.raises(ConfigError, match=r"recorded: .*absent.csv: cannot be read"):
        RT.recorded_runs([str(tmp_path / "absent.csv")])
    # a row scored on other held-out hands (another perfect-bettor profit) is not mixed in
    other = text[2].split(",")
    other[9] = "0.0123"
    (tmp_path / "other.csv").write_text("\n".join([text[0], text[1], ",".join(other)]) + "\n")
    config = _recorded_config(tmp_path / "o.yaml", [0, 1], [str(tmp_path / "other.csv")])
    data = yaml.safe_load(Path(config).read_text())
    data["algorithms"] = data["algorithms"][:1]
    Path(config).write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"PPO seed 1 .*other.csv.* other held-out hands"):
        RT.main(config, as_json=True)


def test_the_curves_legend_names_each_algorithm_even_when_its_first_run_is_recorded(monkeypatch, tmp_path):
    """A recorded run carries no curve; the algorithm's label goes on its first drawn line instead."""
    from pb_gym.experiments.benchmark import regret_table
    from pb_gym.experiments.common import plotting

    drawn = {}

    def keep(fig, path):
        drawn["labels"] = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        return path

    monkeypatch.setattr(plotting, "save", keep)
    point = {"training_seconds": 1.0, "timesteps": 1000, "learned_exact": 0.01, "perfect_exact": 0.02}
    runs = [
        {"algorithm": "PPO", "curve": []},  # recorded
        {"algorithm": "PPO", "curve": [point]},
        {"algorithm": "DQN", "curve": [point]},
    ]
    regret_table.plot_curves({"algorithms": ["PPO", "DQN"], "runs": runs, "task": "t"}, tmp_path / "c.png")
    assert drawn["labels"][:2] == ["PPO", "DQN"]
