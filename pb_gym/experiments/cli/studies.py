"""The study commands of ``pb-gym``: ``evaluate``, ``train`` and ``experiment``, each dispatched to its
study's ``main`` (:mod:`pb_gym.experiments`), and the options they share (CONFIG, ``--out``, ``--json``,
``--resume``, where the chunks run). The studies are imported only when their command runs."""

from __future__ import annotations

import argparse
import sys

from pb_gym.experiments.cli.parsing import UsageError, add_command


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; allowed: an integer >= 1")
    return int(text)


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; allowed: a number of minutes >= 0 (0: no checkpoints)"
        )
    return value


def _study(module: str, args: argparse.Namespace) -> dict:
    """Run a study of :mod:`pb_gym.experiments` (imported only when its command runs: a missing extra is then
    a
    clear usage error, and the other commands start without loading pydantic, matplotlib or torch)."""
    import importlib

    try:
        study = importlib.import_module(module)
    except ImportError as error:  # the `studies` extra (pyyaml, pydantic, matplotlib) is missing
        raise UsageError(
            f"{error}; install the studies extra (pb-gym is not on PyPI; in the clone): "
            "pip install -e '.[studies]'"
        ) from None
    from pb_gym.experiments.common.chunk_store import ResumeError
    from pb_gym.experiments.common.outputs import OutputError
    from pb_gym.experiments.common.scale import (
        ChunkError,
        RunTooLarge,
        SchedulerError,
        check_scheduler_address,
    )
    from pb_gym.experiments.common.study import SerialOnly
    from pb_gym.experiments.common.yaml_config import ConfigError

    options = {"resume": args.resume} if getattr(args, "resume", None) is not None else {}
    if args.backend is not None:  # (else the study's own default)
        options["backend"] = args.backend
    if getattr(args, "checkpoint_minutes", None) is not None:
        options["checkpoint_minutes"] = args.checkpoint_minutes
    if args.scheduler is not None:  # before any work: a malformed address is a usage error
        try:
            check_scheduler_address(args.scheduler)
        except ValueError as error:
            raise UsageError(str(error)) from None
    try:
        return study.main(
            args.config,
            out=args.out,
            as_json=args.json,
            scheduler=args.scheduler,
            workers=args.workers,
            **options,
        )
    except ConfigError as error:  # one line for one problem; several are listed one per line
        text = str(error)
        raise UsageError(f"invalid config{chr(10) if chr(10) in text else ': '}{text}") from None
    except (OutputError, ResumeError, RunTooLarge, SerialOnly) as error:
        raise UsageError(str(error)) from None
    except (ChunkError, SchedulerError) as error:
        print(f"pb-gym {args.command}: error: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:  # the command is over: its output folder is free again, whatever happened
        from pb_gym.experiments.common import outputs

        outputs.release_all()


def cmd_evaluate(args: argparse.Namespace) -> dict:
    """Evaluate betting systems side by side from a YAML study config (common random numbers)."""
    return _study("pb_gym.experiments.evaluate", args)


def cmd_train(args: argparse.Namespace) -> dict:
    """Train a stable-baselines3 agent from a YAML config and evaluate it beside the betting systems."""
    return _study("pb_gym.experiments.train", args)


def cmd_experiment(args: argparse.Namespace) -> dict:
    """Run a study: ``counting``, ``atlas`` (every bet: how far a count beats it), ``ruin``, ``roads``,
    ``leaks``, ``optimum`` (the exact optimal session), ``procedures`` or ``benchmark`` (RL algorithms
    over seeds against the known optimum)."""
    return _study(f"pb_gym.experiments.{STUDY_MODULES.get(args.study, args.study)}", args)


STUDIES = {
    "counting": "Where card counting wins. Deals real shoes and computes, before every hand, the exact EV "
    "of ten bets (banker, player, tie 8:1 and 9:1, pairs, Dragon 7, Panda 8, no-commission "
    "and EZ banker) from the cards not yet seen; reports how often and by how much each "
    "turns positive, the perfect-information bettor's gain, linear counts (tags from the "
    "effects of removal, thresholds chosen on a separate deal) and the cut-card effect, "
    "with 95% CIs over shoes. configs/experiments/counting.yaml: 10,000 shoes, about "
    "10 s on 2 idle cores, a minute on a busy machine. --out DIR: counting.json, "
    "counting.txt, depth.png.",
    "atlas": "The counting atlas: every bet of the catalog, exact. Deals real shoes and, per bet, gives "
    "the full-shoe house edge, the share of hands with a positive exact EV, the "
    "perfect-information gain per 100 hands and per shoe, the best linear count (tags from "
    "the effects of removal) and an integer count (thresholds fitted on a separate deal), "
    "published counts replayed beside the published figures, and the cut-card effect, with "
    "95% CIs over shoes; ranked by the count's gain. configs/experiments/atlas.yaml: 10,000 "
    "shoes. --out DIR: atlas.json, atlas.csv, atlas.md, atlas.txt, atlas.png.",
    "ruin": "Gambler's ruin, for teaching. Flat one-unit bets on player, banker or a fair coin until a "
    "target or ruin: the exact probability of reaching the target and the expected hands "
    "(closed form and an exact Markov chain) against simulated sessions dealt by the "
    "engine, and the Martingale illusion under table maximums. "
    "configs/experiments/ruin.yaml: about 30 s on 2 idle cores, 2-3 minutes on a busy "
    "machine. --out DIR: report.md (the teaching page), ruin.json and the plots; "
    "examples/ruin.ipynb builds the same page.",
    "roads": "Do the roads predict? Real shoes with the exact odds of every hand: the road pattern "
    "systems (streak, chop, copy the column, BB-PP, the ask road) with 95% CIs over shoes "
    "beside the exact EV of the bets they made, the information bound (perfect information "
    "against what the road state says about P(banker)), and the streaks, column lengths and "
    "derived roads' red share of real shoes against independent hands, with a "
    "goodness-of-fit test. configs/experiments/roads.yaml: 10,000 shoes. --out DIR: "
    "roads.json, roads.csv, roads.md, systems.png, streaks.png, scoreboard.png.",
    "benchmark": "The regret table of RL algorithms on a benchmark task (pb_gym/Discover-v0): each "
    "algorithm trained from its pb-gym train config once per seed, scored by benchmark.score "
    "against the perfect-information bettor, aggregated over the seeds as rliable recommends "
    "(interquartile mean, stratified bootstrap CI) with the training wall time of each run; "
    "each run is kept as it finishes (resumable). configs/benchmark/discover.yaml: 5 "
    "algorithms x 5 seeds, about an hour on 2 cores. --out DIR: benchmark.json, benchmark.md, "
    "benchmark.csv, benchmark.txt, curves.png (exact learning curves against wall time).",
    "leaks": "Information leaks: a card known at dealing positions 1-6, edge sorting (one card, four "
    "cards, the best split of the values), the burned cards shown, the bottom card known "
    "from a ribbon-spread cut. The exact edge of betting the best of banker / player / tie "
    "when positive beside the published figure, a simulation on the engine's deal with its "
    "95% CI, the leak's frequency and the edge per 100 hands. configs/experiments/leaks.yaml. "
    "--out DIR: leaks.json, leaks.csv, leaks.md.",
    "optimum": "The session optimum: reach a goal from a bankroll within a hand limit, exact. Over a grid "
    "of goals, table maxima and hand limits, the optimal play (pb_gym.session_optimum) beside bold play, "
    "timid play and every classic system on player and on banker (evaluate's exact chain on the same "
    "session; a chain that is not finite is listed with its reason). configs/experiments/optimum.yaml: "
    "48 sessions, about a minute on 2 cores. --out DIR: optimum.json, optimum.csv, optimum.md, "
    "optimum.png.",
    "procedures": "Dealing procedures: every bet's perfect-information gain and its EoR count's gain "
    "under a hand-shuffled shoe, a continuous shuffler keeping the last 0, 1 or 5 hands out, and the "
    "cut card 7 to 104 cards from the end. configs/experiments/procedures.yaml. --out DIR: "
    "procedures.json, procedures.csv, procedures.md, procedures.png (gains against the cut card's depth).",
}
"""The studies of ``pb-gym experiment``, described in its ``--help``."""

STUDY_MODULES = {"benchmark": "benchmark.regret_table"}
"""The module of :mod:`pb_gym.experiments` that runs each study not run by its package's own ``main``."""

CONFIG_REFERENCE = (
    "every config key, with its type, default and allowed values: docs/reference/config.md "
    "(the configuration reference, generated from the schemas; `make docs` serves it)"
)
"""Where ``evaluate --help`` and ``train --help`` send a reader for the config's keys."""


def _studies_description() -> str:
    import textwrap

    lines = [cmd_experiment.__doc__ or "", "", "studies:"]
    for name, text in STUDIES.items():
        lines += textwrap.wrap(text, width=90, initial_indent=f"  {name:<10}", subsequent_indent=" " * 12)
    return "\n".join(lines)


def _add_study_arguments(
    parser: argparse.ArgumentParser, config_help: str, out_help: str, resume_help: str | None = None
) -> None:
    """CONFIG, --out, --json, the scale-out options and --resume, shared by every study subcommand."""
    parser.add_argument("config", help=config_help)
    parser.add_argument("--out", default=None, metavar="DIR", help=out_help)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--backend",
        default=None,
        choices=("serial", "threads", "processes", "dask"),
        help="where the study's chunks run: serially here, side by side on this process's threads, "
        "in local processes, or on Dask; the results are identical (default: threads for "
        "evaluate, serial for the other studies)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="an existing Dask scheduler, e.g. tcp://10.0.0.5:8786 (default with "
        "--backend dask: a local cluster on 127.0.0.1)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="chunks at once for --backend threads, processes for --backend processes, or the local "
        "Dask cluster's workers (default: the cores)",
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=resume_help
        or "with --out DIR: finished chunks are kept in DIR/.partial "
        "until the run ends, and a rerun computes only the missing ones (the default "
        "when DIR holds an unfinished run of the same config; --resume also "
        "requires --out); --no-resume discards them and starts over",
    )


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``evaluate``, ``train`` and ``experiment`` subcommands of ``sub``."""
    evaluate = add_command(
        sub, cmd_evaluate, "betting systems side by side from a YAML config", epilog=CONFIG_REFERENCE
    )
    _add_study_arguments(
        evaluate,
        "study config, e.g. configs/systems/classic.yaml",
        "write report.json, systems.csv and PNG plots here",
    )

    train = add_command(
        sub, cmd_train, "train an RL agent (stable-baselines3) from a YAML config", epilog=CONFIG_REFERENCE
    )
    _add_study_arguments(
        train,
        "training config, e.g. configs/train/ppo.yaml",
        "model, settings, learning curve and evaluation (default out/train/NAME)",
        "the trained model and the held-out evaluation's finished chunks are "
        "kept in OUT/.partial until the run ends, and a rerun does not train "
        "again and computes only the missing chunks (the default when OUT holds "
        "an unfinished run of the same config); --no-resume discards them and "
        "starts over",
    )
    train.add_argument(
        "--checkpoint-minutes",
        type=_minutes,
        default=None,
        metavar="M",
        help="keep a checkpoint of the training in OUT/.partial every M minutes (default "
        "5; 0: none): an interrupted training continues from the last one, with "
        "the same result as a run without a stop",
    )

    experiment = add_command(
        sub,
        cmd_experiment,
        "the counting, atlas and gambler's-ruin studies",
        description=_studies_description(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    experiment.add_argument("study", choices=tuple(STUDIES), help="which study (described above)")
    _add_study_arguments(
        experiment, "study config, e.g. configs/experiments/counting.yaml", "write the report and plots here"
    )
