"""pb-gym evaluate: config validation, an end-to-end study, common random numbers, the statistics."""

import json
import math
import pickle

import numpy as np
import pytest
import yaml

from pb_gym import engine
from pb_gym import rules as R
from pb_gym.agents import systems as betting_systems
from pb_gym.experiments import cli, evaluate
from pb_gym.experiments.common import scale
from pb_gym.experiments.common.yaml_config import ConfigError, validate
from pb_gym.experiments.evaluate import chunk_play
from pb_gym.experiments.evaluate import figures as evaluate_figures
from pb_gym.experiments.evaluate import report as evaluate_report
from pb_gym.experiments.evaluate import settings as evaluate_settings
from pb_gym.experiments.evaluate import summary as summaries

from repo_paths import ROOT  # noqa: E402

SMALL = {
    "name": "small",
    "rules": {"decks": 8},
    "table": {"unit": 10, "minimum": 10, "maximum": 640},
    "bankroll": 1000,
    "sessions": 300,
    "hands": 150,
    "win_goal": 300,
    "seed": 4,
    "systems": [
        {"type": "flat", "bet": "banker"},
        {"type": "flat", "bet": "banker", "name": "flat twin"},
        {"type": "martingale", "bet": "banker", "on_cap": "reset"},
        {"type": "martingale", "bet": "player", "on_cap": "cap"},
        {"type": "paroli", "bet": "player"},
        {"type": "labouchere"},
        {"type": "oscars_grind"},
        {"type": "chop"},
        {"type": "kelly", "bets": ["banker", "player", "tie", "dragon7", "panda8"]},
        {"type": "flat", "bet": "tie"},
    ],
}


def study(**changes):
    data = json.loads(json.dumps(SMALL))
    data.update(changes)
    return validate(data, evaluate.StudyConfig, "small.yaml")


@pytest.fixture(scope="module")
def report():
    return evaluate.run_study(study())


def test_report_fields_and_accounting(report):
    assert [s["name"] for s in report["systems"]][:3] == ["flat", "flat twin", "martingale"]
    for s in report["systems"]:
        for key in (
            "name",
            "bet",
            "hands",
            "wagered",
            "net",
            "ev_per_unit_wagered",
            "ci95",
            "exact_edge",
            "p_ruin",
            "p_target",
            "mean_final_bankroll",
            "median_final_bankroll",
            "max_drawdown",
            "average_stake",
            "largest_stake",
            "table_max_binds",
        ):
            assert key in s, key
        assert s["p_ruin"] + s["p_target"] + s["p_stop_loss"] <= 1.0
        assert s["largest_stake"] <= 640
        finals = report["final_bankrolls"][s["name"]]
        assert np.mean(finals) == pytest.approx(s["mean_final_bankroll"])
        assert np.sum(finals) - 300 * 1000 == pytest.approx(s["net"], abs=1e-6)
        if s["hands"]:
            assert s["average_stake"] == pytest.approx(s["wagered"] / s["hands"])


def test_every_system_is_within_5_standard_errors_of_its_exact_edge(report):
    """The staking changes the shape of the results, not the edge: a 5-sigma bound per system."""
    for s in report["systems"]:
        if s["interval_note"]:  # no bet, or too few bets for an interval
            continue
        lo, hi = s["ci95"]
        se = (hi - lo) / (2 * 1.959964)
        assert abs(s["ev_per_unit_wagered"] - s["exact_edge"]) < 5 * se, s["name"]
        assert s["edge_within_ci"] == (lo <= s["exact_edge"] <= hi)


def test_common_random_numbers_and_flat_banker_matches_the_engine(report):
    flat, twin = report["systems"][0], report["systems"][1]
    assert flat["net"] == twin["net"] and flat["p_target"] == twin["p_target"]
    # replay: flat banker 10 per hand until +300 or ruin, over the same dealt hands
    rules = R.Rules()
    (chunk,) = scale.plan(300, 5000, 4)  # one chunk: chunk_sessions (5000) > sessions
    seed = chunk.child_seeds(1 + len(SMALL["systems"]))[0]
    state = engine.init(rules, 300, seed=seed)
    bankroll = np.full(300, 1000.0)
    active = np.ones(300, dtype=bool)
    for _ in range(150):
        _, hand = engine.deal(rules, state)
        bankroll += np.where(active, 10 * hand.payoffs(rules)[:, 0], 0.0)
        active &= (bankroll >= 10) & (bankroll < 1300)
    assert bankroll.sum() - 300_000 == pytest.approx(flat["net"])
    assert flat["exact_edge"] == pytest.approx(-0.010579, abs=5e-7)


def test_martingale_limits_are_reported(report):
    by_name = {s["name"]: s for s in report["systems"]}
    assert by_name["martingale"]["table_max_binds"] > 0  # 10 .. 640, then the series restarts
    assert by_name["martingale (player)"]["largest_stake"] == 640
    kelly = by_name["kelly"]
    assert kelly["hands"] < 0.01 * kelly["hands_dealt"]  # bets only when the shoe turns positive
    if kelly["hands"]:
        assert kelly["exact_edge"] > 0


def test_ratio_ci_from_sums_matches_a_direct_computation():
    rng = np.random.default_rng(0)
    wagered = rng.uniform(10, 100, 500)
    net = -0.01 * wagered + rng.normal(0, 5, 500)
    ratio, lo, hi = evaluate_report.ratio_ci(
        net.sum(), wagered.sum(), net @ net, wagered @ wagered, net @ wagered, 500
    )
    assert ratio == pytest.approx(net.sum() / wagered.sum())
    residual = net - ratio * wagered
    se = residual.std(ddof=1) / math.sqrt(500) / wagered.mean()
    assert hi - lo == pytest.approx(2 * 1.959964 * se, rel=1e-6)


def test_evaluate_cli_end_to_end(tmp_path, capsys):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({**SMALL, "sessions": 60, "hands": 50}))
    out = tmp_path / "out"
    assert cli.main(["evaluate", str(path), "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {s["name"] for s in printed["systems"]} >= {"flat", "martingale", "kelly"}
    for name in (
        "report.json",
        "systems.csv",
        "paths.json",
        "bankroll_paths.png",
        "final_bankrolls.png",
        "ev_per_unit_wagered.png",
    ):
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "report.json").read_text())["systems"] == printed["systems"]
    assert (out / "bankroll_paths.png").read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["evaluate", str(path)]) == 0
    text = capsys.readouterr().out
    assert "EV/unit wagered" in text and "martingale" in text


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sessions": 0}, r"sessions: Input should be greater than or equal to 1 \(got 0\)"),
        ({"sesions": 10}, r"sesions: unknown key; allowed keys here: name, rules, table, bankroll"),
        ({"table": {"minimum": 10, "maximum": 5}}, r"table: maximum \(5\) must be >= minimum \(10\)"),
        ({"table": {"unit": "ten"}}, r"table.unit: Input should be a valid number"),
        ({"rules": {"decks": 10}}, r"rules: Rules.decks=10 is not allowed; allowed: an integer from 1 to 8"),
        ({"rules": {"decks": "eight"}}, r"rules.decks: Input should be a valid integer"),
        ({"rules": {"tie_pays": 7}}, r"rules: Rules.tie_pays=7 is not allowed; allowed: 8 or 9"),
        (
            {"rules": {"banker_variant": "x"}},
            r"rules.banker_variant: Input should be 'standard', 'no-commission' or 'ez'",
        ),
        ({"rules": {"cut_card": 2}}, r"Rules.cut_card=2 is not allowed; allowed: 6..208"),
        ({"systems": []}, r"systems: List should have at least 1 item"),
        ({"systems": [{"type": "martingal"}]}, r"systems.0: Input tag 'martingal' .* 'flat', 'martingale'"),
        (
            {"systems": [{"type": "flat", "stake": 2}]},
            r"systems.0.flat.stake: unknown key; allowed keys here: name, bet, base, on_cap, type",
        ),
        ({"systems": [{"type": "paroli", "wins_to_reset": 0}]}, r"wins_to_reset: Input should be greater"),
        (
            {"systems": [{"type": "flat", "bet": "lucky6"}]},
            r"systems.0: bet 'lucky6' is not offered by these rules; offered: banker, player, tie, "
            r"player_pair, banker_pair, dragon7, panda8 \(offer a catalog or custom bet by naming it in "
            r"rules.side_bets\)",
        ),
        ({"systems": [{"type": "random", "bets": []}]}, r"systems.0.random.bets: .*at least 1 item"),
        (
            {"systems": [{"type": "kelly", "fraction": 1.5}]},
            r"systems.0.kelly.fraction: Input should be less than or equal to 1 \(got 1.5\)",
        ),
        (
            {"systems": [{"type": "kelly", "bet": "player"}]},
            r"systems.0.kelly.bet: unknown key; allowed keys here: name, base, on_cap, bets, fraction, type",
        ),
        (
            {"systems": [{"type": "reverse_martingale", "wins_to_reset": 3}]},
            r"systems.0.reverse_martingale.wins_to_reset: unknown key",
        ),
        (
            {"systems": [{"type": "labouchere", "line": [1, -2]}]},
            r"systems.0.labouchere.line.1: Input should be greater than 0 \(got -2\)",
        ),
        (
            {"systems": [{"type": "flat", "bet": "dragon7"}], "rules": {"side_bets": ["panda8"]}},
            r"systems.0: bet 'dragon7' is not offered by these rules; offered: banker, player, tie, panda8",
        ),
        ({"systems": [{"type": "flat", "base": 0.5}]}, r"systems.0.base: 0.5 unit\(s\) of 10 is below"),
        ({"systems": [{"type": "flat"}, {"type": "flat"}]}, r"two systems are named 'flat'"),
        ({"bankroll": 5}, r"bankroll 5 is below the table minimum 10"),
    ],
)
def test_config_errors_name_the_key_and_what_is_allowed(change, message):
    with pytest.raises(ConfigError, match=message):
        study(**change)


def test_config_file_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("systems: [flat\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        evaluate.main(str(bad))
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="the top level must be a mapping"):
        evaluate.main(str(bad))
    with pytest.raises(ConfigError, match="no such config file"):
        evaluate.main(str(tmp_path / "missing.yaml"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["evaluate", str(bad)])
    assert exit_info.value.code == 2
    assert "invalid config" in capsys.readouterr().err


@pytest.mark.parametrize(
    "path",
    [
        "configs/systems/classic.yaml",
        "configs/systems/martingale-limits.yaml",
        "configs/systems/paroli-vs-flat.yaml",
        "configs/systems/tie-bettors.yaml",
        "configs/systems/smoke.yaml",
    ],
)
def test_shipped_configs_are_valid(path):

    from pb_gym.experiments.common.yaml_config import load

    config = load(ROOT / path, evaluate.StudyConfig)  # (from any folder)
    assert config.systems
    if path.endswith("classic.yaml"):
        assert {s.type for s in config.systems} == set(betting_systems.SYSTEMS)
        assert all(
            list(getattr(s, "bets", [getattr(s, "bet", None)])) == ["banker"]
            for s in config.systems
            if s.type not in ("follow_winner", "chop", "random")
        )


def test_exact_conditional_compares_with_the_exact_ev_of_the_shoes_bet_on():
    report = evaluate.run_study(study(exact_conditional=True, sessions=80, hands=60))
    for s in report["systems"]:
        if s["interval_note"]:  # no bet, or too few bets for an interval
            continue
        conditional = s["exact_edge_conditional"]
        assert conditional is not None
        lo, hi = s["ci95"]
        assert s["edge_within_ci"] == (lo <= conditional <= hi)
        if s["bet"] in ("banker", "player", "banker/player") and s["type"] != "kelly":
            # the exact EV of the banker/player hands bet stays near the full-shoe edge
            assert abs(conditional - s["exact_edge"]) < 5e-4, s["name"]
    plain = evaluate.run_study(study(sessions=80, hands=60))
    assert all(s["exact_edge_conditional"] is None for s in plain["systems"] if s["type"] not in ("kelly",))


def test_the_table_shows_the_exact_figure_each_interval_is_checked_against(capsys):
    """With exact_conditional the 'exact' column of a system that does not count (flat, a learned
    policy) is the exact EV of the shoes it bet on, the figure its CI is checked against, not the
    full-shoe edge of the same bets (a learned bettor of positive shoes showed -9.5% there)."""
    report = evaluate.run_study(
        study(
            exact_conditional=True,
            sessions=60,
            hands=80,
            systems=[
                {"type": "flat", "bet": "tie"},
                {"type": "perfect", "bets": ["tie", "dragon7", "panda8"]},
            ],
        )
    )
    evaluate_report.print_report(report)
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    tie, perfect = report["systems"]
    assert tie["exact_edge"] == pytest.approx(-0.143596, abs=5e-7)  # the full-shoe tie edge
    assert f" {100 * tie['exact_edge_conditional']:+.3f}% " in rows["flat"]
    assert f" {100 * tie['exact_edge']:+.3f}% " not in rows["flat"]
    assert f" {100 * perfect['exact_edge']:+.3f}% " in rows["perfect"]  # a counting system's own
    assert rows["exact:"].startswith("exact: the exact EV of the cards unseen before each bet")


def test_kelly_report_is_bit_identical_with_and_without_the_ev_bound(monkeypatch):
    """The Kelly bettor skips the exact EV where pb_gym.ev_bound proves every bet negative: a study
    where it bets often (1-deck shoes) gives the same report, to the last bit, with the skip off."""
    import functools

    kellys = [
        {"type": "kelly", "bets": ["banker", "player", "tie", "dragon7", "panda8"]},
        {"type": "kelly", "bets": ["panda8", "banker"], "fraction": 0.5, "name": "half kelly"},
    ]
    config = study(
        rules={"decks": 1}, sessions=120, hands=60, chunk_sessions=60, bankroll=20000, systems=kellys
    )
    fast = evaluate.json_report(evaluate.run_study(config))
    monkeypatch.setattr(
        betting_systems.Kelly,
        "__init__",
        functools.partialmethod(betting_systems.Kelly.__init__, skip_proven=False),
    )
    slow = evaluate.json_report(evaluate.run_study(config))
    fast.pop("timings"), slow.pop("timings")
    assert fast == slow
    assert all(s["hands"] >= 100 for s in fast["systems"])  # both bet: decisions were compared


# ------------------------------------------------------------------------- fans, states, the table
FAN_STUDY = {
    "sessions": 300,
    "hands": 150,
    "chunk_sessions": 100,
    "win_goal": 300,
    "stop_loss": 600,
    "systems": [
        {"type": "never"},
        {"type": "flat"},
        {"type": "martingale"},
        {"type": "kelly", "bets": ["banker"]},
    ],
}


@pytest.fixture(scope="module")
def fan_report():
    return evaluate.run_study(study(**FAN_STUDY))


def test_fan_quantiles_are_exact_where_the_bankrolls_take_few_values(fan_report):
    never = fan_report["paths"]["never"]
    assert all(never["quantiles_exact"])
    assert never["quantiles"] == [[1000.0] * 5] * len(fan_report["checkpoints"])  # not 1002.5
    for name, fan in fan_report["paths"].items():
        assert all(fan["quantiles_exact"])  # 100 sessions a chunk: never more than 256 values
        finals = fan_report["final_bankrolls"][name]  # the bankrolls at the last checkpoint
        np.testing.assert_allclose(
            fan["quantiles"][-1], np.quantile(finals, evaluate.QUANTILES), rtol=0, atol=1e-9
        )


def test_fan_quantiles_fall_back_to_the_histogram_inside_the_exact_range(monkeypatch):
    monkeypatch.setattr(chunk_play, "FAN_EXACT_VALUES", 10)
    config = study(**{**FAN_STUDY, "hands": 60})
    report = evaluate.run_study(config)
    width = evaluate.fan_range(config) / evaluate.FAN_BINS
    fan = report["paths"]["flat"]
    assert fan["quantiles_exact"][0] and not fan["quantiles_exact"][-1]
    finals = report["final_bankrolls"]["flat"]
    quantiles = np.array(fan["quantiles"][-1])
    assert np.all(np.abs(quantiles - np.quantile(finals, evaluate.QUANTILES)) <= width + 1e-9)
    assert finals.min() <= quantiles.min() and quantiles.max() <= finals.max()
    assert report["paths"]["never"]["quantiles"][-1] == [1000.0] * 5  # one value: still exact


def test_exact_quantiles_match_numpy_on_ties():
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 100, 1001):
        values = rng.integers(0, 12, n) * 9.5
        table = np.unique(values, return_counts=True)
        np.testing.assert_allclose(
            summaries.exact_quantiles(*table), np.quantile(values, evaluate.QUANTILES), rtol=0, atol=1e-12
        )


def test_session_states_over_time_match_the_end_of_session_figures(fan_report):
    for s in fan_report["systems"]:
        states = {k: np.array(v) for k, v in fan_report["paths"][s["name"]]["states"].items()}
        assert set(states) == set(evaluate.STATES)
        np.testing.assert_allclose(sum(states.values()), 1.0)
        assert states["playing"][0] == 1.0
        assert states["ruin"][-1] == s["p_ruin"] and states["target"][-1] == s["p_target"]
        assert states["stop_loss"][-1] == s["p_stop_loss"]
        for ended in ("ruin", "target", "stop_loss"):  # an ended session stays ended
            assert np.all(np.diff(states[ended]) >= 0)
    assert fan_report["paths"]["martingale"]["states"]["target"][-1] > 0.3  # the second peak


def test_fan_merge_is_exact_and_independent_of_where_chunks_ran(fan_report):
    config = study(**FAN_STUDY)
    chunks = scale.plan(config.sessions, config.chunk_sessions, config.seed)
    parts = [evaluate.run_chunk(config.model_dump(mode="json"), chunk) for chunk in reversed(chunks)]
    merged = evaluate.merge(sorted(parts, key=lambda part: part["chunk"]))
    edges = np.linspace(0.0, evaluate.fan_range(config), evaluate.FAN_BINS + 1)
    for stats in merged:
        again = evaluate_report.fan_summary(stats, edges, evaluate.STATES)
        expected = {k: v for k, v in fan_report["paths"][stats["name"]].items() if k != "samples"}
        assert json.dumps(again) == json.dumps(expected)
    tables = [part["systems"][1]["fan_values"][3] for part in parts]
    forward, backward = summaries.merge_value_counts(tables), summaries.merge_value_counts(tables[::-1])
    assert np.array_equal(forward[0], backward[0]) and np.array_equal(forward[1], backward[1])
    assert summaries.merge_value_counts(tables + [None]) is None


def test_a_handful_of_bets_gives_no_interval_and_no_warning(capsys):
    report = evaluate.run_study(study(**{**FAN_STUDY, "sessions": 100}))
    kelly = next(s for s in report["systems"] if s["type"] == "kelly")
    assert (
        0 < kelly["hands"] < evaluate_report.MIN_BETS_FOR_INTERVAL
    )  # a Kelly bettor seldom bets off 8 decks
    assert kelly["interval_note"] == "too few bets for an interval"
    assert all(math.isnan(x) for x in kelly["ci95"]) and kelly["edge_within_ci"] is None
    evaluate.print_report(report)
    out = capsys.readouterr().out
    assert "WARNING: kelly" not in out
    assert f"NOTE: kelly: {kelly['hands']} bet(s), too few bets for an interval (at least 30)" in out
    assert [s["interval_note"] for s in report["systems"] if s["type"] == "never"] == ["no bet placed"]


def test_the_terminal_table_shows_long_names_in_full(report, capsys):
    long = "martingale (recovering), banker, capped at the table maximum"
    renamed = {
        **report,
        "systems": [{**s, "name": long} if i == 2 else s for i, s in enumerate(report["systems"])],
    }
    evaluate.print_report(renamed)
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("system"))
    row = next(line for line in lines if line.startswith(long))
    assert row.startswith(long + " ")
    # the bets column ends at the same place in the header and in every row
    end = header.index("bets") + len("bets")
    for s in renamed["systems"]:
        line = next(line for line in lines if line.startswith(s["name"] + " "))
        assert line[:end].rstrip().endswith(f"{s['hands']:,}"), s["name"]


# ------------------------------------------------------------------------ one source for every schema
def test_every_system_schema_is_its_constructors_signature():
    """The keys of each system's config are its constructor's keywords (its own and its bases'),
    less what it fixes itself, with the constructor's defaults."""
    import inspect

    for key, cls in evaluate_settings.SYSTEM_CLASSES.items():
        model = evaluate_settings.SYSTEM_CONFIGS[key]
        keywords = set()
        for klass in cls.__mro__:
            if "__init__" in vars(klass):
                parameters = inspect.signature(klass.__init__).parameters
                keywords |= {
                    n
                    for n, p in parameters.items()
                    if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                }
                if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
                    break
        assert set(model.model_fields) == keywords - set(cls.not_configurable) | {"type"}, key
        for name, field in model.model_fields.items():
            if name != "type" and not field.is_required():
                default = inspect.signature(cls).parameters.get(name)
                if default is not None and default.default is not inspect.Parameter.empty:
                    assert field.default == default.default, (key, name)
    assert list(evaluate_settings.SYSTEM_CONFIGS["flat"].model_fields) == [
        "name",
        "bet",
        "base",
        "on_cap",
        "type",
    ]
    assert evaluate_settings.SYSTEM_CONFIGS["kelly"].model_fields["fraction"].default == 1.0


def test_a_new_constructor_parameter_is_a_new_config_key():
    from typing import Annotated

    from annotated_types import Ge

    class Capped(betting_systems.Flat):
        """Flat, but stops after ``stop_after`` bets (a test system)."""

        key = "capped"

        def __init__(self, stop_after: Annotated[int, Ge(1)] = 10, **kwargs) -> None:
            super().__init__(**kwargs)
            self.stop_after = stop_after

    model = evaluate_settings.system_config_model("capped", Capped)
    assert list(model.model_fields) == ["name", "bet", "base", "on_cap", "stop_after", "type"]
    assert model(type="capped").stop_after == 10
    with pytest.raises(Exception, match="greater than or equal to 1"):
        model(type="capped", stop_after=0)


def test_the_rules_section_is_the_rules_dataclass():
    import dataclasses

    from pb_gym.experiments.common.yaml_config import RulesConfig

    assert list(RulesConfig.model_fields) == [f.name for f in dataclasses.fields(R.Rules)]
    assert RulesConfig().to_rules() == R.Rules()


# ----------------------------------------------------------------------------- bounded memory
def test_many_chunks_keep_the_report_and_the_per_chunk_memory_is_bounded(monkeypatch):
    config = study(sessions=120, hands=60, chunk_sessions=7)
    kept = evaluate.run_study(config)  # every session's final bankroll too (for callers that pair them)
    monkeypatch.setattr(evaluate, "BATCH_BYTES", 1)  # merge each chunk as it comes: 18 batches of one
    bounded = evaluate.run_study(config, final_bankrolls=False)
    assert bounded["chunks"] == 18 and "final_bankrolls" not in bounded
    assert evaluate_report.json_report(kept) | {"timings": 0} == evaluate_report.json_report(bounded) | {
        "timings": 0
    }
    assert kept["paths"] == bounded["paths"]
    for s in bounded["systems"]:
        finals = kept["final_bankrolls"][s["name"]]
        assert s["median_final_bankroll"] == float(np.median(finals))
        assert s["mean_final_bankroll"] == pytest.approx(float(np.mean(finals)), rel=1e-15)
        values, counts, exact_ = summaries.final_table(bounded["final_summaries"][s["name"]])
        assert exact_ and np.array_equal(np.repeat(values, counts), np.sort(finals))
    # what a finished chunk holds does not depend on the sessions of the study, only on the chunk
    small, huge = study(sessions=10_000), study(sessions=2 * 10**9)  # (10**12 is refused as a config)
    assert evaluate.chunk_result_bytes(small) == evaluate.chunk_result_bytes(huge)
    evaluate.check_memory(huge, parallel=2)  # 2 * 10**9 sessions in chunks of 5,000: bounded, accepted
    with pytest.raises(evaluate.memory.TooLarge, match=r"lower `chunk_sessions` \(a running chunk needs "):
        evaluate.check_memory(study(sessions=10**9, chunk_sessions=10**9), parallel=1)


def test_the_final_bankroll_summary_is_exact_while_small_and_within_its_precision_after():
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 100, 1001):  # numpy's median of odd and even counts, ties included
        values = rng.integers(0, 12, n) * 9.5
        summary = summaries.final_summary(values)
        assert summaries.final_median(summary) == float(np.median(values))
        assert summaries.final_quantiles(summary) == [
            float(q) for q in np.quantile(values, evaluate.QUANTILES)
        ]
    finals = np.concatenate([rng.lognormal(6.5, 1.0, 90_000), np.zeros(50), [1e6]])
    parts = [summaries.final_summary(part) for part in np.array_split(finals, 9)]
    merged = parts[0]
    for part in parts[1:]:
        merged = summaries.merge_final(merged, part)
    backward = parts[-1]
    for part in parts[-2::-1]:
        backward = summaries.merge_final(backward, part)
    assert merged["values"] is None  # more than FINAL_EXACT_VALUES distinct values: buckets
    assert np.array_equal(merged["buckets"][0], backward["buckets"][0])  # in any order
    assert np.array_equal(merged["buckets"][1], backward["buckets"][1])
    assert merged["sessions"] == finals.size and merged["max"] == 1e6 and merged["min"] == 0.0
    exact_q = np.quantile(finals, (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.999))
    approx_q = summaries.final_quantiles(merged, (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.999))
    np.testing.assert_allclose(approx_q, exact_q, rtol=summaries.RELATIVE_ERROR * (1 + 1e-9))
    assert summaries.final_median(merged) == pytest.approx(np.median(finals), rel=summaries.RELATIVE_ERROR)
    # its size is bounded by the range of the values, not by the number of sessions
    positive = finals[finals > 0]
    buckets = math.log(positive.max() / positive.min()) / math.log1p(2 * summaries.RELATIVE_ERROR) + 3
    assert len(merged["buckets"][0]) <= buckets
    more = merged
    for _ in range(3):  # 8 times the sessions, the same values: the same buckets
        more = summaries.merge_final(more, more)
    assert more["sessions"] == 8 * finals.size
    assert summaries.summary_bytes(more) == summaries.summary_bytes(merged)


def test_a_slice_of_the_plan_is_the_same_chunks():
    whole = scale.plan(1003, 100, 7)
    part = scale.plan(1003, 100, 7, range(4, 9))
    assert [(c.index, c.count, c.start, c.size) for c in part] == [
        (c.index, c.count, c.start, c.size) for c in whole[4:9]
    ]
    assert all(
        np.array_equal(a.seed.generate_state(4), b.seed.generate_state(4))
        for a, b in zip(part, whole[4:9], strict=True)
    )


def test_the_systems_are_seats_of_one_table_session(monkeypatch):
    """run_chunk plays the systems as the seats of one pb_gym.session.Session (common hands), with a
    stake slot for each column some system may bet; a column outside a system's bet_columns is refused."""
    from pb_gym import session as session_

    made = []
    real = session_.Session

    def spy(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(session_, "Session", spy)
    config = study(
        sessions=20,
        hands=10,
        systems=[{"type": "flat"}, {"type": "chop"}, {"type": "flat", "bet": "tie"}, {"type": "never"}],
    )
    part = evaluate.run_chunk(config.model_dump(mode="json"), scale.plan(20, 20, 4)[0])
    (table_session,) = made
    assert table_session.n_seats == 4 and table_session.n_tables == 20
    assert table_session.n_bets == 3  # banker, player, tie: the spots these systems may bet
    for k, stats in enumerate(part["systems"]):
        assert np.array_equal(stats["final_bankrolls"], table_session.seats.bankroll[k])

    class Stray(betting_systems.Flat):
        key = "stray"

        def propose(self, view):
            proposal = super().propose(view)
            return proposal._replace(column=np.full_like(proposal.column, R.BETS.index("tie")))

    monkeypatch.setattr(chunk_play, "make_system", lambda system_config: Stray(name="stray"))
    with pytest.raises(
        ValueError,
        match=r"system 'stray' proposed a bet column outside its "
        r"bet_columns\(\) \(0,\)",
    ):
        evaluate.run_chunk(config.model_dump(mode="json"), scale.plan(20, 20, 4)[0])


# ---------------------------------------------------------------- one-shoe sessions (env.one_shoe)
ONE_SHOE = {
    "name": "one shoe",
    "rules": {"decks": 2, "cut_card": 20, "hand_after_cut": True},
    "table": {"unit": 10, "minimum": 10, "maximum": 640},
    "bankroll": 200,
    "sessions": 120,
    "hands": 1000,
    "one_shoe": True,
    "chunk_sessions": 50,
    "seed": 9,
    "systems": [
        {"type": "flat"},
        {"type": "martingale", "bet": "player"},
        {"type": "kelly", "bets": ["banker", "player", "tie"]},
    ],
}


def shoe_lengths(rules: R.Rules, sessions: int, chunk_sessions: int, seed: int, n_systems: int):
    """Hands each session's shoe deals, replayed on the engine alone from the chunks' deal seeds."""
    lengths = []
    for chunk in scale.plan(sessions, chunk_sessions, seed):
        state = engine.init(rules, chunk.size, seed=chunk.child_seeds(1 + n_systems)[0])
        dealt = np.zeros(chunk.size, dtype=np.int64)
        live = np.ones(chunk.size, dtype=bool)
        while live.any():
            engine.deal(rules, state)
            dealt += live
            live &= ~engine.shoe_over(rules, state)
        lengths.append(dealt)
    return np.concatenate(lengths)


def test_a_one_shoe_study_ends_every_session_with_its_shoe():
    config = validate(ONE_SHOE, evaluate.StudyConfig, "one-shoe.yaml")
    rules = config.rules.to_rules()
    # hands is lowered to the most a shoe can deal: ceil((104 - 20) / 4) + 1 (the hand after the cut)
    assert config.hands == rules.most_hands_per_shoe == 22
    report = evaluate.run_study(config)
    expected = shoe_lengths(rules, 120, 50, 9, 3)
    assert np.array_equal(report["session_hands"], expected)
    assert expected.min() >= 15 and report["hands_dealt"] == expected.sum()
    for s in report["systems"]:
        states = report["paths"][s["name"]]["states"]
        assert s["hands_dealt"] == expected.sum()
        assert states["playing"][-1] == 0.0  # every session ended: by its shoe, or before it
        assert states["one_shoe"][-1] + s["p_ruin"] + s["p_target"] + s["p_stop_loss"] == 1.0
    flat = report["systems"][0]
    assert flat["hands"] == expected.sum()  # flat bets every hand of every shoe (no ruin at 20 units)
    assert report["paths"]["flat"]["states"]["one_shoe"][-1] == 1.0


def test_a_one_shoe_study_is_the_same_in_any_chunking_and_says_so_in_its_header(capsys):
    one = evaluate.run_study(validate(ONE_SHOE, evaluate.StudyConfig, "a"))
    # the same sessions, their chunks run in two worker processes (each chunk is seeded by its index)
    again = evaluate.run_study(validate(ONE_SHOE, evaluate.StudyConfig, "b"), backend="processes", workers=2)
    assert [s["net"] for s in one["systems"]] == [s["net"] for s in again["systems"]]
    assert np.array_equal(one["session_hands"], again["session_hands"])
    evaluate_report.print_report(one)
    average = one["hands_dealt"] / 120
    assert f"120 sessions x one shoe ({average:.1f} hands on average)" in capsys.readouterr().out


def test_the_final_bankroll_figure_shows_both_peaks_of_a_progression(tmp_path, monkeypatch):
    # a Martingale's sessions end at the goal or ruined: its row has bars at both ends, and beside it
    # the shares of sessions that the report's own ends give (a box plot would show one box between)
    from pb_gym.experiments.common import plotting
    from pb_gym.experiments.evaluate import run_study
    from pb_gym.experiments.evaluate.settings import StudyConfig

    config = StudyConfig.model_validate(
        {
            **SMALL,
            "bankroll": 100,
            "table": {"unit": 10, "minimum": 10, "maximum": 1000},
            "win_goal": 50,
            "sessions": 400,
            "hands": 400,
            # on player (even money) every bankroll is a whole number of units: ruin ends at 0 exactly
            "systems": [{"type": "martingale", "bet": "player"}],
        }
    )
    report = run_study(config, final_bankrolls=False)
    entry = report["systems"][0]
    drawn = {}
    monkeypatch.setattr(plotting, "save", lambda fig, path, **_: drawn.setdefault("fig", fig) and path)
    evaluate_figures.plot_final_bankrolls(report, tmp_path / "final.png")
    labels = {t.get_text() for t in drawn["fig"].axes[0].texts}
    assert 0.2 < entry["p_ruin"] < 0.8 and entry["p_ruin"] + entry["p_target"] == pytest.approx(1.0)
    assert f"{entry['p_target']:.0%} at the goal, {entry['p_ruin']:.0%} ruined" in labels
    # the bars: one collection of axis-aligned bars on the row's base, the tallest BAR_HEIGHT tall,
    # at ruin (0) and at the goal (150)
    (bars,) = drawn["fig"].axes[0].collections[:1]
    corners = np.array([path.vertices[:4] for path in bars.get_paths()])
    x, y = corners[..., 0], corners[..., 1]
    assert np.array_equal(x[:, 0], x[:, 3]) and np.array_equal(y[:, 0], y[:, 1])
    assert np.all(y[:, 0] == y[0, 0])
    assert (y[:, 2] - y[:, 0]).max() == pytest.approx(evaluate_figures.BAR_HEIGHT)
    assert x.min() == 0.0 and x.max() == 150.0


def test_the_systems_are_grouped_by_kind():
    systems = [{"type": t} for t in ("kelly", "martingale", "flat", "paroli", "chop", "sb3", "dalembert")]
    assert evaluate_figures.system_groups(systems) == [
        (evaluate_figures.KINDS[0][0], [2, 4]),
        (evaluate_figures.KINDS[1][0], [1, 6]),
        (evaluate_figures.KINDS[2][0], [3]),
        (evaluate_figures.OTHER_KIND, [0, 5]),
    ]
    assert [heading for heading, _ in evaluate_figures.system_groups([{"type": "kelly"}])] == [
        evaluate_figures.OTHER_KIND
    ]


def _system(**changes):
    return {
        "hands": 5000,
        "hands_dealt": 10000,
        "p_target": 0.0,
        "p_ruin": 0.0,
        "p_stop_loss": 0.0,
        "median_final_bankroll": 897.0,
    } | changes


def test_each_panel_says_what_its_sessions_came_to():
    assert evaluate_figures.outcome(_system(p_target=0.6463, p_ruin=0.3536), 10_000) == (
        "65% reach the goal, 35% ruined, median 897"
    )
    assert evaluate_figures.outcome(_system(p_target=0.042, p_ruin=0.002), 10_000) == (
        "4% reach the goal, 0.2% ruined, median 897"
    )
    # three ends leave no room for the median
    assert evaluate_figures.outcome(_system(p_target=0.3, p_ruin=0.3, p_stop_loss=0.3), 10) == (
        "30% reach the goal, 30% ruined, 30% stopped"
    )
    assert evaluate_figures.outcome(_system(median_final_bankroll=1500.0), 10) == "median 1,500"
    # a Kelly bettor that seldom finds an edge worth a bet, and a system that never bets
    assert evaluate_figures.outcome(_system(hands=821, hands_dealt=10_000_000), 10_000) == (
        "821 bets in 10,000 sessions: it seldom bets"
    )
    assert evaluate_figures.outcome(_system(hands=0), 10) == "no bet placed: the bankroll never moves"
    assert evaluate_figures.ends(_system(p_target=0.64, p_ruin=0.36)) == "64% at the goal, 36% ruined"
    assert evaluate_figures.ends(_system()) == "none at the goal or ruined"


def test_the_bankroll_paths_figure_puts_each_kind_on_one_scale_in_panels_that_do_not_overlap(
    report, tmp_path, monkeypatch
):
    """bankroll_paths.png: a panel a system, each group of systems of a kind on one bankroll scale under
    its heading, each panel titled with its name and its outcome, its sessions' states in the
    Okabe-Ito colours; laid out in inches, no panel (title, tick labels and state strip included)
    overlaps another or leaves the figure."""
    from pb_gym.experiments.common import plotting

    drawn = {}
    monkeypatch.setattr(plotting, "save", lambda fig, path, **_: drawn.setdefault("fig", fig) and path)
    evaluate_figures.plot_fans(report, tmp_path / "paths.png")
    fig = drawn["fig"]
    systems = report["systems"]
    assert len(fig.axes) == len(systems)
    groups = evaluate_figures.system_groups(systems)
    assert {heading for heading, _ in groups} <= {t.get_text() for t in fig.texts}
    panels = iter(fig.axes)
    by_system = {i: next(panels) for _, members in groups for i in members}
    for _, members in groups:
        assert len({by_system[i].get_ylim() for i in members}) == 1
    assert len({by_system[members[0]].get_ylim() for _, members in groups}) > 1
    for i, system in enumerate(systems):
        ax = by_system[i]
        assert ax.get_title(loc="left") == system["name"]
        assert evaluate_figures.outcome(system, report["sessions"]) in {t.get_text() for t in ax.texts}
    ruined = [i for i, s in enumerate(systems) if s["p_ruin"] > 0]
    strip = by_system[ruined[0]].collections[-1]
    colours = {tuple(np.round(c[:3], 3)) for c in strip.get_facecolors()}
    plt = plotting.pyplot()
    to_rgb = plt.matplotlib.colors.to_rgb
    assert tuple(np.round(to_rgb(evaluate_figures.STATE_COLOURS["ruin"]), 3)) in colours
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox.padded(1)
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes]
    assert all(figure_box.contains(b.x0, b.y0) and figure_box.contains(b.x1, b.y1) for b in boxes)
    for k, box in enumerate(boxes):
        assert not any(box.overlaps(other) for other in boxes[k + 1 :])
    plt.close(fig)


def around_edges(edges: np.ndarray, *more: object) -> np.ndarray:
    """The fan's edges, the floats just below and just above each, and ``more`` values."""
    return np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf), *more])


def searched_bins(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The fan bins by binary search: bin ``i`` holds ``[edges[i], edges[i + 1])``, the last one also
    everything above (NaN, which the search sorts last, too), the first everything below."""
    return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 1)


def fan_histograms(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The fan checkpoint's histograms of the rows of ``values`` (no end codes)."""
    from pb_gym.experiments.evaluate import ledger

    codes = np.zeros(values.shape, dtype=np.int8)
    return ledger.fan_checkpoint(values, edges, codes, evaluate.STATE_CODES)[0]


@pytest.mark.parametrize("top", [2000.0, 1500.0, 3.0, 1e6 / 3.0])
def test_a_fan_bin_is_the_binary_searchs(top):
    # the fan histograms are checked bit for bit: the computed bin must be the binary search's,
    # exactly on the rounded edges, between them, below the range and above it (each of those
    # values a row of its own, so a row's histogram is its one value's bin)
    edges = np.linspace(0.0, top, evaluate.FAN_BINS + 1)
    rng = np.random.default_rng(7)
    values = around_edges(edges, [-1e300, 0.0, 1e300, top * 10, np.inf, -np.inf, np.nan])
    bins = fan_histograms(values[:, None], edges)
    assert np.all(bins.sum(axis=1) == 1)
    np.testing.assert_array_equal(bins.argmax(axis=1), searched_bins(edges, values))
    spread = rng.uniform(-0.1 * top, 1.2 * top, (1, 20_000))
    grid = rng.uniform(0.0, top, (15, 400))  # the shape of a chunk's bankrolls: seats x sessions
    for rows in (spread, grid):
        np.testing.assert_array_equal(
            fan_histograms(rows, edges),
            [np.bincount(searched_bins(edges, row), minlength=evaluate.FAN_BINS + 1) for row in rows],
        )


@pytest.mark.parametrize("top", [2000.0, 1500.0, 3.0, 1e6 / 3.0, 1e300])
def test_a_checkpoints_compiled_tallies_are_numpys(top):
    """The checkpoint's compiled pass (evaluate_ledger.fan_checkpoint) counts what numpy would, bit for
    bit: the histogram of the binary search's bins (on the rounded edges, either side of them, below
    and above the range, at the infinities, NaN, both zeros) and the sessions' end codes."""
    from pb_gym import session as session_
    from pb_gym.experiments.evaluate import ledger

    edges = np.linspace(0.0, top, evaluate.FAN_BINS + 1)
    rng = np.random.default_rng(5)
    adversarial = around_edges(
        edges, [-1e300, -5.0, -5e-324, 0.0, -0.0, 5e-324, 1e300, top * 10, np.inf, -np.inf, np.nan]
    )
    finite = adversarial[np.isfinite(adversarial)]
    rows = np.stack(
        [
            adversarial,
            rng.permutation(adversarial),
            rng.permutation(np.resize(finite[finite != 0.0], len(adversarial))),  # no zero, no NaN
            rng.choice(np.abs(finite), len(adversarial)),  # its zeros all +0.0
            np.resize(np.array([0.0, -0.0, 1.0, -1.0]), len(adversarial)),  # a -0.0 among +0.0
            rng.uniform(-0.1 * top, 1.2 * top, len(adversarial)),
        ]
    )
    codes = rng.integers(0, len(session_.END_REASONS), rows.shape).astype(np.int8)
    fans, ends = ledger.fan_checkpoint(rows, edges, codes, evaluate.STATE_CODES)
    assert fans.dtype == ends.dtype == np.int64
    np.testing.assert_array_equal(
        fans, [np.bincount(searched_bins(edges, row), minlength=evaluate.FAN_BINS + 1) for row in rows]
    )
    np.testing.assert_array_equal(
        ends, [np.bincount(row, minlength=len(session_.END_REASONS))[evaluate.STATE_CODES] for row in codes]
    )


@pytest.mark.parametrize("only_python_seats", [False, True], ids=["programs and kelly", "kelly alone"])
def test_a_chunk_played_on_two_threads_is_the_same_bits_as_on_one(only_python_seats, monkeypatch):
    """The hand's pass runs over chunks of tables on the session's threads (a chunk of 2,048 tables or
    more); what sums over the tables (the money staked on each column) is summed in table order
    after it, or, on one thread, inside the pass in the same order, so the report does not depend
    on the threads. A chunk of Python seats alone (Kelly) runs the same pass over no program."""
    from pb_gym import parallel
    from pb_gym.experiments.evaluate import ledger

    kelly = [s for s in SMALL["systems"] if s["type"] == "kelly"]  # (its side bets turn positive)
    systems = kelly if only_python_seats else SMALL["systems"]
    config = study(sessions=2500, hands=90, chunk_sessions=2500, systems=systems)
    summed_after = []
    totals = ledger.account_totals
    monkeypatch.setattr(ledger, "account_totals", lambda *args: summed_after.append(1) or totals(*args))
    reports, calls = [], []
    before = parallel.get_num_threads()
    try:
        for n in (1, 2):
            parallel.set_num_threads(n)
            reports.append(evaluate.run_study(config))
            calls.append(len(summed_after))
    finally:
        parallel.set_num_threads(before)
    assert calls[0] == 0 and calls[1] > 0  # (both ways were taken: in the pass, then after it)
    one, two = ((r["systems"], r["paths"], r["final_bankrolls"]) for r in reports)
    assert pickle.dumps(one) == pickle.dumps(two)
    assert all(s["wagered"] > 0 for s in reports[0]["systems"])  # every seat bet (a real comparison)


def test_a_checkpoint_row_with_more_than_the_exact_table_holds_is_told_without_sorting():
    """The fans' checkpoints sort a seat's bankrolls only where they may fit the exact table: the hash
    count agrees with np.unique on either side of the limit, takes +0.0 and -0.0 as one value, and
    leaves a row with a NaN to the sort (its range is the sort's)."""
    from pb_gym.experiments.evaluate import ledger

    rng = np.random.default_rng(3)
    most = summaries.FAN_EXACT_VALUES
    rows = []
    for distinct in (1, most, most + 1, 4000):
        pool = rng.choice(10_000, size=distinct, replace=False) * 0.5
        rows.append(rng.permutation(np.concatenate([pool, rng.choice(pool, 5000 - distinct)])))
    signed_zeros = np.array([0.0, -0.0])  # one value: they compare equal
    rows.append(
        np.concatenate([np.arange(most - 1, dtype=float) + 1, np.resize(signed_zeros, 5000 - most + 1)])
    )
    with_nan = np.arange(5000, dtype=float)
    with_nan[17] = np.nan
    rows.append(with_nan)
    rows = np.array(rows)
    np.testing.assert_array_equal(ledger.many_distinct(rows, most), [False, False, True, True, False, False])
    # where it says many, np.unique finds more than the table holds; where few, at most that many
    for row, many in zip(rows[:5], ledger.many_distinct(rows, most)[:5], strict=True):
        assert (len(np.unique(row)) > most) == many


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"stop_loss": 200, "win_goal": 100, "one_shoe": False},
        {"one_shoe": True, "hands": 200},
    ],
    ids=["goal", "goal and stop-loss", "one shoe"],
)
def test_dropping_finished_seats_from_the_pass_changes_no_bit(monkeypatch, changes):
    """The hand's pass visits, for each seat, only the tables where it may still have work
    (pb_gym.session.live): a seat that ended and was cleared is dropped from its list. The report
    is the same bits as with every table visited at every hand (the lists never shortened)."""
    from pb_gym.session import live

    config = study(sessions=600, chunk_sessions=300, **changes)
    dropped = []
    drop = live.drop_finished

    def counting(live_rows, live_count, *args):
        before = int(live_count.sum())
        drop(live_rows, live_count, *args)
        dropped.append(before - int(live_count.sum()))

    monkeypatch.setattr(live, "drop_finished", counting)
    shortened = evaluate.run_study(config)
    monkeypatch.setattr(live, "drop_finished", lambda *args: None)
    every_row = evaluate.run_study(config)
    parts = [
        (r["systems"], r["paths"], r["final_bankrolls"], r["session_hands"]) for r in (shortened, every_row)
    ]
    assert pickle.dumps(parts[0]) == pickle.dumps(parts[1])
    assert sum(dropped) > 0.2 * 600 * len(config.systems)  # many seat-rows did drop (a real comparison)


def test_a_seat_leaves_its_list_the_hand_after_it_ended():
    """drop_finished keeps a table while the seat plays there or ended in this hand (its row is
    cleared the next hand), and drops it after; the lists stay in table order."""
    from pb_gym.session import END_REASONS, live

    playing, ruin = END_REASONS.index("playing"), END_REASONS.index("ruin")
    rows, count = live.all_live(2, 5)
    ended = np.full((2, 5), playing, dtype=np.int8)
    terminated = np.zeros((2, 5), dtype=np.bool_)
    truncated = np.zeros((2, 5), dtype=np.bool_)
    ended[0, [1, 3]] = ruin  # seat 0 ends at tables 1 and 3 in this hand
    terminated[0, [1, 3]] = True
    ended[1, 4] = END_REASONS.index("max_hands")
    truncated[1, 4] = True
    live.drop_finished(rows, count, ended, terminated, truncated)
    assert count.tolist() == [5, 5]  # ended this hand: still listed (the next hand clears the row)
    terminated[:] = truncated[:] = False  # the next hand cleared them
    live.drop_finished(rows, count, ended, terminated, truncated)
    assert count.tolist() == [3, 4]
    assert rows[0, :3].tolist() == [0, 2, 4] and rows[1, :4].tolist() == [0, 1, 2, 3]


# ----------------------------------------------------------------------------- sessions that all end


def test_a_chunk_whose_sessions_have_all_ended_deals_no_more_hands():
    """A million hands cost what the hands to the last session's end cost, and report what ten
    thousand report but for the hands the sessions count (their table's, whoever sat out) and the
    sample paths, whose final bankrolls stand to the million."""
    # sessions that all end within tens of hands (five units up or down)
    long, short = (
        study(
            table={"unit": 10, "minimum": 10, "maximum": 5000},
            sessions=100,
            hands=hands,
            win_goal=50,
            stop_loss=50,
            sample_paths=2,
            systems=[{"type": "flat", "bet": "banker"}, {"type": "martingale", "bet": "banker"}],
        )
        for hands in (10**6, 10**4)
    )
    (chunk,) = scale.plan(100, long.chunk_sessions, long.seed)
    dealt = [
        evaluate.run_chunk(config.model_dump(mode="json"), chunk)["hands_run"] for config in (long, short)
    ]
    assert dealt[0] == dealt[1] < 200
    one, two = evaluate.run_study(long), evaluate.run_study(short)
    assert one["hands_dealt"] == 100 * 10**6 and two["hands_dealt"] == 100 * 10**4
    for a, b in zip(one["systems"], two["systems"], strict=True):
        assert a.pop("hands_dealt") == 100 * 10**6 and b.pop("hands_dealt") == 100 * 10**4
        assert a == b and a["p_target"] + a["p_stop_loss"] == 1.0
    assert pickle.dumps(one["final_bankrolls"]) == pickle.dumps(two["final_bankrolls"])
    assert np.array_equal(one["session_hands"], np.full(100, 10**6))
    for name, fan in one["paths"].items():
        assert fan["states"]["playing"][-1] == 0.0
        assert all(
            fan["states"][state][-1] == two["paths"][name]["states"][state][-1] for state in evaluate.STATES
        )
        for path, shorter in zip(fan["samples"], two["paths"][name]["samples"], strict=True):
            assert len(path) == 10**6 + 1 and path[: 10**4 + 1] == shorter
            assert path[10**4 + 1 :] == [shorter[-1]] * (10**6 - 10**4)


@pytest.mark.parametrize("python_seats", [False, True], ids=["programs", "python seats"])
def test_stopping_when_the_sessions_have_ended_changes_no_bit(python_seats, monkeypatch):
    """Chunks that stop dealing (the first, whose sample paths the report shows) and chunks that deal
    to the hand limit give the report that dealing every hand gives, to the bit."""
    if python_seats:  # every system through its own propose and update
        monkeypatch.setattr(betting_systems.Programmed, "compiled", lambda self: False)
    systems = [
        {"type": "flat", "bet": "banker"},
        {"type": "martingale", "bet": "player"},
        {"type": "paroli", "bet": "player"},
        {"type": "labouchere"},
        {"type": "oscars_grind"},
        {"type": "chop"},
        {"type": "random", "bets": ["banker", "tie"]},
    ]
    config = study(sessions=60, chunk_sessions=20, hands=500, win_goal=100, stop_loss=100, systems=systems)
    run, ran = evaluate.run_chunk, []
    monkeypatch.setattr(
        evaluate, "run_chunk", lambda *args, **kwargs: ran.append(run(*args, **kwargs)) or ran[-1]
    )
    stopped = evaluate.run_study(config)
    assert [part["hands_run"] < 500 for part in sorted(ran, key=lambda part: part["chunk"])] == [
        True,
        False,
        False,
    ]
    monkeypatch.setattr(evaluate.ChunkPlay, "over", lambda self: False)  # every hand dealt
    dealt = evaluate.run_study(config)
    parts = [(r["systems"], r["paths"], r["final_bankrolls"], r["session_hands"]) for r in (stopped, dealt)]
    assert pickle.dumps(parts[0]) == pickle.dumps(parts[1])
    assert evaluate_report.json_report(stopped) | {"timings": 0} == evaluate_report.json_report(dealt) | {
        "timings": 0
    }


def test_the_sample_paths_keep_their_last_bankroll_to_the_hand_limit():
    """A path recorded to fewer hands than the study's is its last bankroll after; the values are
    those of tolist(), signed zeros and NaN included, and the repeated tail is one float object."""
    samples = np.array([[1.0, 2.0, 2.0], [0.0, -0.0, -0.0], [np.nan, np.nan, 3.0]])
    paths = evaluate.sample_lists(samples, 5)
    assert paths[0] == [1.0, 2.0, 2.0, 2.0, 2.0]
    assert [math.copysign(1.0, v) for v in paths[1]] == [1.0, -1.0, -1.0, -1.0, -1.0]
    assert math.isnan(paths[2][0]) and math.isnan(paths[2][1]) and paths[2][2:] == [3.0] * 3
    assert len({id(v) for v in paths[0][1:]}) == 1
    full = np.random.default_rng(0).normal(size=(2, 6))
    assert evaluate.sample_lists(full, 6) == full.tolist() and evaluate.sample_lists(np.array([]), 6) == []
