"""The ``pb-gym`` command line: ``odds``, ``simulate``, ``evaluate``, ``train``, ``experiment``, ``score``,
``roads``, ``optimum``, ``bench``, ``lab``.

Every subcommand has ``--help`` and, but ``lab`` (a local web server until Ctrl-C), ``--json`` (one
strict JSON object on stdout, nothing else: a statistic that is undefined is ``null``, explained under
``null_values``). Exit status: 0 done; 2 bad input (an option, a config, a run too large for this
machine), with a message naming the option or key and the allowed values; 1 the environment failed (a
full disk, the output closed early, a lost worker); 130 interrupted (Ctrl-C). Every failure is one line
on stderr, never a traceback.

This shell lives in the top layer because it dispatches to the studies of :mod:`pb_gym.experiments`; the
core (:mod:`pb_gym`) never imports it. It imports only the standard library when it is loaded: numpy,
numba, gymnasium and the core are imported inside :func:`main`'s handlers, so that Ctrl-C while they
load (a second or more on a cold start) is reported like any other interrupt, as one line and status
130, not as a traceback from the import machinery.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from pb_gym import interrupts
from pb_gym.experiments.cli import optimum, studies
from pb_gym.experiments.cli.odds import add_rules_options, cmd_odds, cmd_simulate
from pb_gym.experiments.cli.parsing import UsageError, add_command
from pb_gym.experiments.cli.studies import positive_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy and ruff know the name)
if TYPE_CHECKING:  # for the annotations only; the modules are imported where they are used
    from collections.abc import Sequence


def cmd_bench(args: argparse.Namespace) -> dict:
    """Throughput of the engine, the exact calculator and the environments, and the cost of evaluate
    per seat-hand, idle and (--busy) beside one busy process per core; --rl adds SB3 PPO on this env
    against PPO on CartPole-v1 (needs the rl extra). Figures and side-by-side ratios of one run;
    --save-baseline FILE keeps them, and a later run with --baseline FILE prints each figure with its
    ratio to the kept one (code before a change)."""
    import importlib

    from pb_gym import bench
    from pb_gym.experiments.evaluate import seat_cost as bench_evaluate

    if args.rl:  # (before the engine's figures: one line, not a traceback after the whole bench)
        from pb_gym.agents import learned

        learned.require_rl("pb-gym bench --rl")

    baseline = None
    if args.baseline:
        try:
            baseline = bench.load_baseline(args.baseline)
        except (OSError, ValueError) as error:
            raise UsageError(f"--baseline: {error}") from None
    figures = bench.run(quick=args.quick, load=args.load)
    figures["evaluate"] = bench_evaluate.run(quick=args.quick, load=args.load)
    # the first run's compile (--quick: only the warm start, from the machine's own cache)
    figures["compile"] = bench.compile_cost(cold=not args.quick)
    if args.rl:  # torch: only the top layer may import it
        rl = importlib.import_module("pb_gym.experiments.train.ppo_speed")
        figures["rl"] = rl.run(quick=args.quick, load=args.load)
    if args.save_baseline:
        bench.save_baseline(figures, args.save_baseline)
    if not args.json:
        bench.print_figures(figures, baseline)
        bench_evaluate.print_figures(figures["evaluate"])
        bench.print_compile_cost(figures["compile"])
        if args.rl:
            rl.print_figures(figures["rl"])
    return figures


def cmd_score(args: argparse.Namespace) -> dict:
    """Score a policy on a benchmark task against the perfect-information bettor (pb_gym.benchmark):
    POLICY is a model folder (or model.zip) written by pb-gym train, a model.zip saved by
    stable-baselines3 (model.save) from a model trained on --task's env, or module:callable naming a
    callable from observations (N, obs_dim) float32 to actions (N,)."""
    import importlib

    from pb_gym import benchmark
    from pb_gym.envs import tasks

    session = tasks.is_session_task(args.task)
    given = {
        "--tables": args.tables,
        "--hands": args.hands,
        "--sessions": args.sessions,
        "--exact": args.exact,
    }
    theirs = ("--sessions", "--exact") if session else ("--tables", "--hands")
    wrong = [option for option, value in given.items() if option not in theirs and value not in (None, False)]
    if wrong:
        allowed = " and ".join(theirs)
        kind = "a session task" if session else "a Discover task"
        raise UsageError(f"{', '.join(wrong)}: not for {kind} ({args.task}); allowed: {allowed}")
    try:
        score = importlib.import_module("pb_gym.experiments.benchmark.score")
        result = score.run(
            args.policy,
            args.task,
            args.tables or tasks.SCORE_TABLES,
            args.hands or tasks.SCORE_HANDS,
            args.seed,
            sessions=args.sessions,
            exact=args.exact,
        )
    except (ValueError, ImportError) as error:  # (ImportError: the rl extra a model needs is missing)
        raise UsageError(str(error)) from None
    if not args.json:
        print(benchmark.report(result))
    return result


def cmd_roads(args: argparse.Namespace) -> dict:
    """The roads of a sequence of results (B banker, P player, T tie, oldest first) as a casino
    scoreboard: bead plate, Big Road, Big Eye Boy, Small Road, Cockroach Pig and the ask road
    (the rules: pb_gym.roads). --json prints them as data, --png FILE draws the table's display."""
    from pb_gym import roads

    try:
        outcomes = roads.parse_outcomes(args.outcomes)
    except ValueError as error:
        raise UsageError(str(error)) from None
    board = roads.read_roads(outcomes)
    png = None if args.png is None else _png_file(args.png)
    if png is not None:
        try:
            from pb_gym.experiments.roads import plot as roads_plot
        except ImportError as error:
            raise UsageError(f"--png needs matplotlib ({error}); install the studies extra") from None
        roads_plot.draw_scoreboard(board, png)
    if not args.json:
        sys.stdout.write(roads.scoreboard_text(board))
        if png is not None:
            print(f"scoreboard drawn in {png}")
    return board.to_dict()


def _png_file(text: str) -> str:
    """The file ``--png`` names, checked before anything is drawn: a PNG file in an existing folder
    (``.png`` added to a name without a suffix, as matplotlib would add it, so that the file named
    in the output is the file written). A folder or a device is refused, not written beside."""
    from pathlib import Path

    allowed = "allowed: a PNG file path, e.g. scoreboard.png (.png is added to a name without a suffix)"
    if not text.strip():
        raise UsageError(f"--png {text!r} is not allowed; {allowed}")
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise UsageError(f"--png {text}: is a folder; {allowed}")
    if path.exists() and not path.is_file():
        raise UsageError(f"--png {text}: is not a regular file (a device, a pipe or a socket); {allowed}")
    if not path.suffix:
        path = path.with_name(path.name + ".png")
    elif path.suffix.lower() != ".png":
        raise UsageError(f"--png {text}: the suffix {path.suffix} is not allowed; {allowed}")
    if path.exists() and not path.is_file():
        raise UsageError(f"--png {path}: is not a regular file (a folder, a device...); {allowed}")
    if not path.parent.is_dir():
        raise UsageError(f"--png {text}: the folder {path.parent} does not exist; {allowed}")
    return str(path)


def cmd_lab(args: argparse.Namespace) -> dict:
    """The classroom lab in the browser: one hand, gambler's ruin, the Martingale illusion, bold play,
    the roads and counting, every simulation dealt from real shoes beside its exact answer. A local web
    app on 127.0.0.1 only (nothing is fetched from the internet, no file is written); Ctrl-C stops it.
    Needs the lab extra (Dash)."""
    from pb_gym.experiments import lab

    lab.require_lab()  # (one line and status 2 without the extra, before anything loads)
    from pb_gym.experiments.lab import server

    try:
        return server.serve(args.port, open_browser=not args.no_browser)
    except server.PortError as error:
        raise UsageError(str(error)) from None


# ------------------------------------------------------------------------------------------ main
def _port(text: str) -> int:
    if not text.isdigit() or not (int(text) == 0 or 1024 <= int(text) <= 65535):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; allowed: an integer from 1024 to 65535 (0: any free port)"
        )
    return int(text)


def _task_id(text: str) -> str:
    from pb_gym.envs import tasks

    try:
        return tasks.get_session_task(text).id if tasks.is_session_task(text) else tasks.get_task(text).id
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _seed(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; allowed: an integer >= 0")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pb-gym`` and its subcommands."""
    from pb_gym import __version__

    parser = argparse.ArgumentParser(
        prog="pb-gym",
        description="Punto Banco as a research instrument: exact odds, a vectorized "
        "shoe engine, environments and studies.",
    )
    parser.add_argument("--version", action="version", version=f"pb-gym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    odds = add_command(sub, cmd_odds, "exact probabilities and EV of every bet")
    shoe = odds.add_mutually_exclusive_group()
    shoe.add_argument("--decks", type=int, default=None, help="a full shoe of 1-8 decks (default 8)")
    shoe.add_argument(
        "--ranks",
        default=None,
        metavar="c_A,c_2,...,c_K",
        help="13 comma-separated counts of the cards remaining (A,2,...,10,J,Q,K) instead of a full shoe",
    )
    odds.add_argument(
        "--bets",
        default=None,
        metavar="NAME,NAME,...",
        help="the catalog bets to price: all (default) or comma-separated names, e.g. "
        "banker,dragon_bonus_player,lucky6 (the list: pb_gym.catalog.bet_names())",
    )
    odds.add_argument(
        "--known",
        action="append",
        default=None,
        metavar="POS=RANKS[,...]",
        help="cards known at dealing positions 1-6 (player, banker, player, banker, then "
        "the next two cards): a rank (1=9) or a set of ranks an edge sorter sees "
        "(1=6789); ranks A,2-9,T,J,Q,K; may be given several times (1=9 --known 4=T), "
        "each position once",
    )
    add_rules_options(odds)

    sim = add_command(sub, cmd_simulate, "deal hands with the engine and compare with the exact odds")
    sim.add_argument("--decks", type=int, default=8, help="decks in the shoe, 1-8 (default 8)")
    sim.add_argument("--hands", type=int, default=1_000_000, help="hands to deal (default 1,000,000)")
    sim.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    sim.add_argument(
        "--tables", type=int, default=None, help="tables dealt in parallel (default min(hands, 4096))"
    )
    add_rules_options(sim)

    studies.add_parsers(sub)

    from pb_gym.envs import tasks

    score = add_command(sub, cmd_score, "score a policy on a benchmark task (pb_gym/Discover-v0, ...)")
    score.add_argument(
        "policy", metavar="MODEL_OR_MODULE:CALLABLE", help="a pb-gym train model folder, or module:callable"
    )
    score.add_argument(
        "--task",
        default="pb_gym/Discover-v0",
        type=_task_id,
        help="the benchmark task: " + ", ".join([*tasks.TASKS, *tasks.SESSION_TASKS]) + " (the namespace "
        "may be left out; default pb_gym/Discover-v0)",
    )
    score.add_argument(
        "--tables",
        type=positive_int,
        default=None,
        help=f"held-out tables (default {tasks.SCORE_TABLES}; not for a session task)",
    )
    score.add_argument(
        "--hands",
        type=positive_int,
        default=None,
        help=f"hands per table (default {tasks.SCORE_HANDS}; not for a session task)",
    )
    score.add_argument(
        "--sessions",
        type=positive_int,
        default=None,
        help="a session task's held-out sessions (default 100,000)",
    )
    score.add_argument(
        "--exact",
        action="store_true",
        help="a session task: also value the policy exactly, asked once per state (a deterministic "
        "policy of the observation)",
    )
    score.add_argument(
        "--seed",
        type=_seed,
        default=tasks.SCORE_SEED,
        help=f"held-out seed: table i is seeded seed + i (default {tasks.SCORE_SEED})",
    )
    score.add_argument("--json", action="store_true", help="print one JSON object")

    road = add_command(sub, cmd_roads, "the bead plate, Big Road and derived roads of a shoe's results")
    road.add_argument(
        "outcomes",
        metavar="OUTCOMES",
        help="the results, oldest first: a string of B, P and T, e.g. BBPTPPPB",
    )
    road.add_argument("--json", action="store_true", help="print the roads as one JSON object")
    road.add_argument("--png", default=None, metavar="FILE", help="draw the scoreboard in this PNG file")
    optimum.add_parser(sub)

    lab = add_command(sub, cmd_lab, "the classroom lab in the browser (needs the lab extra)")
    lab.add_argument(
        "--port", type=_port, default=8050, help="the port on 127.0.0.1 (default 8050; 0: any free port)"
    )
    lab.add_argument("--no-browser", action="store_true", help="serve without opening a browser")
    lab.set_defaults(json=False)

    bench = add_command(sub, cmd_bench, "throughput of the engine, exact odds and environments")
    bench.add_argument("--quick", action="store_true", help="short timings (smoke test)")
    bench.add_argument(
        "--busy",
        "--load",
        dest="load",
        action="store_true",
        help="measure again beside one busy process per core that the bench starts (a loaded machine)",
    )
    bench.add_argument(
        "--save-baseline",
        default=None,
        metavar="FILE",
        help="also write the figures as JSON to FILE (the code before a change)",
    )
    bench.add_argument(
        "--baseline",
        default=None,
        metavar="FILE",
        help="print each figure with its ratio to those of FILE (written by --save-baseline)",
    )
    bench.add_argument(
        "--rl",
        action="store_true",
        help="add SB3 PPO steps/s on this env vs CartPole-v1 (needs the rl extra)",
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


EXIT_OK = 0
EXIT_FAILURE = 1
"""The environment failed: a full disk, output closed early (broken pipe), a lost worker."""
EXIT_USAGE = 2
"""Bad input: an option, a config file, a run too large for this machine."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as shells report it)."""
EXIT_TERMINATED = 143
"""SIGTERM (128 + 15): stopped like Ctrl-C, its finished work kept for a rerun."""

Terminated = interrupts.Terminated


def _silence_broken_stdout() -> None:
    """If stdout cannot be written (a full disk, a closed pipe), point it at /dev/null, so that
    Python's final flush of what is still buffered cannot fail a second time, with a traceback,
    after the failure has been reported. A working stdout is left alone."""
    try:
        sys.stdout.flush()
        return
    except (OSError, ValueError):
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _usable_streams() -> None:
    """A closed stdout or stderr (``>&-``) writes to /dev/null instead of failing after the work is
    done; a stream whose encoding cannot write a name (``PYTHONIOENCODING=ascii`` and a system named
    in another script) writes it escaped (``\\xe8``) instead of raising UnicodeEncodeError."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 (for the process's life)
        elif hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (OSError, ValueError):
                pass


def _fail(status: int, message: str) -> int:
    _silence_broken_stdout()
    try:
        print(message, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return status


def _run(argv: Sequence[str] | None) -> int:
    from pb_gym import parallel

    problem = parallel.environment_problem()  # (before numba is imported: it fails on 0 itself)
    if problem is not None:
        return _fail(EXIT_USAGE, f"pb-gym: error: {problem}")
    from pb_gym import memory, strict_json

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "scheduler", None) and args.backend != "dask":
        parser.error("--scheduler needs --backend dask")
    try:
        result = args.func(args)
    # (ImportError: an extra the command needs is not installed; agents.learned.MissingExtra names it)
    except (UsageError, memory.TooLarge, ImportError) as error:
        parser.exit(EXIT_USAGE, f"pb-gym {args.command}: error: {error}\n")
    if args.json:
        sys.stdout.write(strict_json.dumps(result, indent=2) + "\n")
    sys.stdout.flush()  # here, where a full disk or a closed pipe can still be reported
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pb-gym`` command line. Exit status: 0 success, 1 the environment failed
    (a full disk, output closed early, a lost worker), 2 bad input (an option, a config, a run too
    large for this machine), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); each failure is one
    line on stderr. A signal received at any moment ends the command as interrupted, whatever error
    it caused on its way (:mod:`pb_gym.interrupts`)."""
    _usable_streams()
    with interrupts.handled():
        try:
            status = _run(argv)
        except BaseException as error:  # noqa: BLE001 (each kind is reported or raised again below)
            interrupts.settle()
            return _failure(error)
        interrupts.settle()
        if interrupts.received() is not None:  # (dropped inside a callback, and the command ended)
            return _failure(KeyboardInterrupt())
        return status


def _failure(error: BaseException) -> int:
    """The exit status of a command that raised ``error``, its one line written; an error that is not
    the command line's to report (argparse's SystemExit, a bug's traceback) is raised again."""
    signum = interrupts.received()
    if signum is not None or isinstance(error, KeyboardInterrupt):
        kept = f"; {error}" if isinstance(error, KeyboardInterrupt) and str(error) else ""
        if signum == signal.SIGTERM or isinstance(error, Terminated):
            return _fail(EXIT_TERMINATED, f"pb-gym: terminated (SIGTERM){kept}")
        return _fail(EXIT_INTERRUPTED, f"pb-gym: interrupted{kept}")
    if isinstance(error, BrokenPipeError):
        return _fail(
            EXIT_FAILURE, "pb-gym: error: the output was closed before it was all written (broken pipe)"
        )
    if isinstance(error, OSError):  # a full disk, a read-only or vanished folder, ...
        where = f": {error.filename}" if error.filename else ""
        return _fail(EXIT_FAILURE, f"pb-gym: error: {error.strerror or error}{where}")
    if isinstance(error, MemoryError):
        return _fail(
            EXIT_FAILURE, "pb-gym: error: out of memory; use fewer tables, sessions or shoes per chunk"
        )
    raise error
