"""``pb-gym evaluate``'s merge of its chunks: the totals exact, the binned quantiles exact to a bin."""

import numpy as np

from pb_gym.experiments import evaluate
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.yaml_config import validate

import chunk_tasks


def test_merged_chunks_keep_exact_totals():
    config = validate(chunk_tasks.SCALE_STUDY, evaluate.StudyConfig, "scale")
    report = evaluate.run_study(config)
    chunks = scale.plan(300, 100, 9)
    parts = [evaluate.run_chunk(config.model_dump(mode="json"), chunk) for chunk in chunks]
    for i, system in enumerate(report["systems"]):
        assert system["net"] == sum(p["systems"][i]["sum_net"] for p in parts)
        assert system["hands"] == sum(p["systems"][i]["bets"] for p in parts)
        finals = np.concatenate([p["systems"][i]["final_bankrolls"] for p in parts])
        assert np.array_equal(report["final_bankrolls"][system["name"]], finals)
        assert system["median_final_bankroll"] == float(np.median(finals))


def test_binned_quantiles_are_exact_to_a_bin():
    rng = np.random.default_rng(0)
    values = rng.normal(1000, 150, 20000).clip(0, None)
    edges = np.linspace(0, 2000, evaluate.FAN_BINS + 1)
    where = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, evaluate.FAN_BINS)
    counts = np.bincount(where, minlength=evaluate.FAN_BINS + 1)
    width = edges[1] - edges[0]
    from pb_gym.experiments.evaluate.summary import binned_quantiles

    np.testing.assert_allclose(
        binned_quantiles(counts, edges), np.quantile(values, evaluate.QUANTILES), atol=width
    )
