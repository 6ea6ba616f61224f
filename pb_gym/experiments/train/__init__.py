"""Train a stable-baselines3 agent from a YAML config, then evaluate it beside the betting systems.

``pb-gym train CONFIG [--out DIR] [--json] [--no-resume]``

Read top to bottom (CleanRL style), with the config in :mod:`pb_gym.experiments.train.settings`,
the learning curve in :mod:`pb_gym.experiments.train.curve` and the discovery scoring in
:mod:`pb_gym.experiments.train.discovery_scoring`:

1. Config: the algorithm (PPO, A2C, DQN, MaskablePPO, RecurrentPPO), its hyperparameters (checked
   against the algorithm's constructor), the policy, the environment's keyword arguments (rules,
   table, action mode, ...), parallel tables, timesteps, seed, and the held-out evaluation.
2. Environment: the native vector env through :class:`agents.sb3_vec_env.PuntoBancoSB3VecEnv`, wrapped
   in ``VecMonitor`` (episode statistics), an optional observation transform and ``VecNormalize``
   (running mean / std of the observations; saved and reused at evaluation).
3. Training with SB3's progress bar (on a terminal) and a callback recording the learning curve: mean
   reward per hand (units) and the share of hands with a bet requested, every ``timesteps / curve_points``
   timesteps (CSV and PNG).
4. Saving: ``model.zip``, ``env.json`` (the environment settings the model needs), ``vecnormalize.pkl``
   and the resolved ``config.yaml`` under ``out`` (default ``out/train/<name>``).
5. Held-out evaluation with the SAME machinery as ``pb-gym evaluate``: a :class:`StudyConfig` whose
   systems are the learned policy (``type: sb3``), flat banker at the table minimum and the never-betting
   baseline (plus any ``evaluation.systems``), on seeds not used in training; the same report, plus the
   profit per hand dealt of each system with a 95% CI over sessions (and paired with the learned one).
6. Discovery (optional ``discovery:`` section; :mod:`pb_gym.experiments.train.discovery_scoring`, on
   :mod:`pb_gym.experiments.benchmark.discovery`): the exact scoring against the perfect-information
   bettor, the known optimum -- an exact learning curve during training, then exact and realized
   profit per hand, regret, the best linear count and a calibration plot.
7. Resume: each step is kept in ``OUT/.partial`` as it finishes (the trained model, the discovery
   scoring, each chunk of ``evaluation.chunk_sessions`` held-out sessions) with the config it belongs
   to (:mod:`pb_gym.experiments.common.chunk_store`); an interrupted run rerun with the same command does
   only what
   is missing, and writes what an uninterrupted run writes. Training itself keeps a checkpoint every
   few minutes (:mod:`pb_gym.experiments.train.checkpoint`) and continues from the last one, bit for bit.

Levers for the side-bet task, each a config key: ``env.reward: expected`` (the exact EV of the stakes
for the unseen cards as the training reward: unbiased, without the 40:1 outcome noise),
``init_abstain`` (the initial policy mostly abstains), ``learning_rate_schedule: linear``, and the
observation transform.
"""

from __future__ import annotations

import inspect
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from pb_gym import strict_json
from pb_gym.agents import learned
from pb_gym.envs import config as env_config
from pb_gym.experiments.common import chunk_store, outputs
from pb_gym.experiments.common.scale import ChunkError
from pb_gym.experiments.common.yaml_config import (
    ConfigError,
    load,
    validate,
)
from pb_gym.experiments.evaluate import run_study
from pb_gym.experiments.evaluate.report import json_report, print_report, write_outputs
from pb_gym.experiments.evaluate.settings import StudyConfig
from pb_gym.experiments.train import checkpoint as checkpoints
from pb_gym.experiments.train.curve import (  # noqa: F401
    CURVE_STATE,
    make_curve_callback,
    next_mark,
    print_profit,
    profit_per_hand,
    write_curve,
)
from pb_gym.experiments.train.discovery_scoring import (  # noqa: F401  (make_policy: the package's name too)
    make_exact_curve_callback,
    make_policy,
    run_discovery,
)
from pb_gym.experiments.train.settings import (  # noqa: F401  (the config's names, as before)
    ALGORITHM_MODES,
    NAME,
    RESERVED,
    EnvConfig,
    EvaluationConfig,
    NormalizeConfig,
    TrainConfig,
    held_out_one_shoe,
    study_bets,
    study_data,
)


# ------------------------------------------------------------------------------------- environment
def make_env(config: TrainConfig):
    """The training VecEnv: native vector env -> VecMonitor -> obs transform -> VecNormalize."""
    from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize

    from pb_gym.agents.sb3_vec_env import PuntoBancoSB3VecEnv

    kwargs = config.env.kwargs()
    env: VecEnv = VecMonitor(PuntoBancoSB3VecEnv(num_envs=config.n_envs, **kwargs))
    env = learned.obs_transform_wrapper(env, config.obs_transform, config.env.config())
    norm = config.normalize
    if norm.observations or norm.rewards:
        env = VecNormalize(
            env,
            norm_obs=norm.observations,
            norm_reward=norm.rewards,
            clip_obs=norm.clip_obs,
            gamma=config.hyperparameters.get("gamma", 0.99),
        )
    env.seed(config.seed)
    return env


def hyperparameters(config: TrainConfig) -> dict[str, Any]:
    """The hyperparameters as SB3 wants them (lists -> tuples for train_freq, activation names)."""
    params = dict(config.hyperparameters)
    if isinstance(params.get("train_freq"), list):
        params["train_freq"] = tuple(params["train_freq"])
    policy_kwargs = dict(params.get("policy_kwargs") or {})
    if isinstance(policy_kwargs.get("activation_fn"), str):
        import torch.nn

        name = policy_kwargs["activation_fn"]
        if not hasattr(torch.nn, name):
            raise ConfigError(
                f"hyperparameters.policy_kwargs.activation_fn: {name!r} is not a "
                "torch.nn activation (e.g. ReLU, Tanh)"
            )
        policy_kwargs["activation_fn"] = getattr(torch.nn, name)
    if policy_kwargs:
        params["policy_kwargs"] = policy_kwargs
    if config.learning_rate_schedule == "linear":
        cls = learned.algorithm_class(config.algorithm)
        start = float(
            params.get("learning_rate", inspect.signature(cls.__init__).parameters["learning_rate"].default)
        )
        params["learning_rate"] = LinearSchedule(start)
    return params


class LinearSchedule:
    """``learning_rate x progress_remaining`` (1 at the start of training, 0 at the end); a class, not a
    lambda, so that the saved model records what it was."""

    def __init__(self, start: float) -> None:
        self.start = start

    def __call__(self, progress_remaining: float) -> float:
        return self.start * progress_remaining

    def __repr__(self) -> str:
        return f"LinearSchedule({self.start:g})"


def start_abstaining(model, bias: float) -> None:
    """Add ``bias`` to the no-bet logit of the policy's action head (the first output: action 0 of
    the discrete mode, bet choice 0 of the multidiscrete mode), so that the initial policy mostly
    abstains rather than betting at random."""
    import torch

    with torch.no_grad():
        model.policy.action_net.bias[0] += float(bias)


def episode_note(config: TrainConfig) -> str | None:
    """A note when the held-out sessions are longer than the training episodes can be: with
    ``env.one_shoe`` an episode is one shoe, but a session of ``evaluation.hands`` hands that no shoe
    holds, with ``evaluation.one_shoe: false``, runs across shoes, where the policy's episode counters
    take values it never trained on."""
    if (
        not config.env.one_shoe
        or held_out_one_shoe(config)
        or not learned.sees_hand_counters(config.obs_transform)
    ):
        return None
    hands = config.evaluation.hands or config.env.max_hands
    most = config.env.config().rules.most_hands_per_shoe
    if hands is None or hands <= most:
        return None
    return (
        f"NOTE: the policy was trained on one-shoe episodes (env.one_shoe), but the held-out "
        f"sessions (evaluation.one_shoe: false) play up to {hands} hands, across shoes (a shoe "
        f"deals at most {most}): there its episode counters take values it never saw, and it may "
        "bet differently than in its own episodes."
    )


def evaluation_study(config: TrainConfig, model_path: Path) -> StudyConfig:
    """The held-out study: the learned policy next to flat banker and never betting (and any
    ``evaluation.systems``), with the training environment's rules, table and bankroll."""
    return validate(study_data(config, model_path), StudyConfig, f"{config.name}: evaluation")


# ------------------------------------------------------------------------------------------ training
def _curve_callbacks(config: TrainConfig, cfg: env_config.EnvConfig) -> tuple:
    """The learning curve's callback, for a ``discovery:`` config with curve points the exact curve's
    (else None), and the list of those there are: all fresh."""
    curve = make_curve_callback(max(1, config.total_timesteps // config.curve_points), cfg)
    if config.discovery is None or config.discovery.curve_points == 0:
        return curve, None, [curve]
    exact = make_exact_curve_callback(config, None)
    return curve, exact, [curve, exact]


def train(
    config: TrainConfig,
    out: Path,
    progress: bool = False,
    store: chunk_store.ChunkStore | None = None,
    checkpoint_minutes: float = 0.0,
) -> dict:
    """Train; save the model, its settings and the learning curve in ``out``; return what was written
    (``written``, in order), the timings and curves, and the trained ``model`` object with its
    ``normalizer`` (for the discovery scoring).

    With a ``store``, a checkpoint of the training is kept in it every ``checkpoint_minutes`` (0:
    never), and training continues from the last one kept there, if any
    (:mod:`pb_gym.experiments.train.checkpoint`: the same result, bit for bit, as training without a stop)."""
    import os

    # torch's compiler caches go to pb-gym's documented cache, not $TMPDIR/torchinductor_<user>
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache, "pb-gym", "torchinductor"))
    import torch

    torch.set_num_threads(config.threads)
    cfg = config.env.config()
    env = make_env(config)
    cls = learned.algorithm_class(config.algorithm)
    curve, exact_curve, callbacks = _curve_callbacks(config, cfg)
    checkpoint = checkpoints.latest(store) if store is not None else None
    seconds_before = 0.0
    if checkpoint is not None:
        try:
            model = checkpoints.load(checkpoint, cls, env, callbacks)
        except Exception as error:  # e.g. written by another version of SB3 or torch: start again
            print(
                f"resuming: the training checkpoint in {checkpoint['path']} could not be loaded "
                f"({type(error).__name__}: {error}); training from the start",
                file=sys.stderr,
                flush=True,
            )
            checkpoint = None
            env.close()
            env = make_env(config)  # (the failed load may have changed the env or the callbacks)
            curve, exact_curve, callbacks = _curve_callbacks(config, cfg)
        else:
            seconds_before = float(checkpoint["seconds"])
            print(
                f"resuming: {config.algorithm} continues from its checkpoint at "
                f"{model.num_timesteps:,} of {config.total_timesteps:,} timesteps (kept in "
                f"{checkpoint['path']})",
                file=sys.stderr,
                flush=True,
            )
    if checkpoint is None:
        try:
            model = cls(
                config.policy, env, seed=config.seed, verbose=0, device="cpu", **hyperparameters(config)
            )
        except (TypeError, ValueError, AssertionError, RuntimeError) as error:
            raise ConfigError(
                f"{config.name}: hyperparameters: {config.algorithm} rejects them: {error}"
            ) from None
        if config.init_abstain is not None:
            start_abstaining(model, config.init_abstain)
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    # SB3's default logger makes an empty $TMPDIR/SB3-<time>/ folder per run: nothing outside --out
    model.set_logger(Logger(folder=None, output_formats=[]))
    env = model.get_env()
    normalizer = env if isinstance(env, VecNormalize) else None
    if exact_curve is not None:
        exact_curve.normalizer = normalizer
    learning = list(callbacks)
    if store is not None and checkpoint_minutes > 0:
        learning.append(checkpoints.make_callback(store, checkpoint_minutes, callbacks, seconds_before))
    started = time.perf_counter()
    model.learn(
        config.total_timesteps - (model.num_timesteps if checkpoint is not None else 0),
        callback=CallbackList(learning),
        progress_bar=progress,
        reset_num_timesteps=checkpoint is None,
    )
    seconds = seconds_before + time.perf_counter() - started
    scoring_seconds = exact_curve.seconds if exact_curve is not None else 0.0
    out.mkdir(parents=True, exist_ok=True)
    model_path = learned.save_policy(
        model,
        out,
        config.env.kwargs(),
        config.algorithm,
        config.obs_transform,
        normalizer,
        extra={"name": config.name, "timesteps": int(model.num_timesteps)},
    )
    (out / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    written = [model_path, out / learned.ENV_FILE, out / "config.yaml"]
    if normalizer is not None:
        written.append(out / learned.NORMALIZE_FILE)
    written += write_curve(curve.rows, out, f"{config.name}: {config.algorithm}", cfg)
    env.close()  # the normalizer's statistics stay usable: normalize_obs does not step the env
    return {
        "model": model_path,
        "seconds": seconds - scoring_seconds,
        "curve_scoring_seconds": scoring_seconds,
        "timesteps": int(model.num_timesteps),
        "curve": curve.rows,
        "exact_curve": exact_curve.rows if exact_curve else [],
        "written": written,
        "model_object": model,
        "normalizer": normalizer,
    }


# ------------------------------------------------------------------------------- resumable steps
TRAIN_STEP, DISCOVERY_STEP = "train", "discovery"
"""The steps of a run kept in ``OUT/.partial`` (:mod:`pb_gym.experiments.common.chunk_store`) as they finish:
the
trained model's files in ``.partial/train/``, the discovery scoring's in ``.partial/discovery/``; the
held-out evaluation's finished chunks beside them. While training, its last checkpoint is kept there
too (:mod:`pb_gym.experiments.train.checkpoint`)."""
CHECKPOINT_MINUTES = 5.0
"""Minutes of training between two checkpoints (``--checkpoint-minutes``): the most an interrupted
training loses."""


def _kept_files(store: chunk_store.ChunkStore, step: str, names: object) -> str | None:
    """None if the files ``names`` (relative to the step's folder) recorded with a finished step are
    all there, unchanged (the SHA-256 recorded with the step, whose record is sealed: see
    :mod:`pb_gym.experiments.common.chunk_store`), each a plain name inside the folder; else what is wrong
    with the
    first that is not."""
    if not isinstance(names, list):
        return "its record has no list of files"
    for entry in names:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry)):
            return f"its file entry {str(entry)[:60]!r} is not a [name, SHA-256] pair"
        name, digest = entry
        try:
            path = store.inside(name, under=step)
        except chunk_store.Refused as error:
            return str(error)
        if not path.is_file():
            return f"{name} is missing"
        chunk_store.check_private(path, "the kept file")
        if learned.file_sha256(path) != digest:
            return f"{name} changed since it was kept"
    return None


def _record(folder: Path, written: list[Path]) -> list[list[str]]:
    return [[Path(p).relative_to(folder).as_posix(), learned.file_sha256(p)] for p in written]


def _kept_step(store: chunk_store.ChunkStore, name: str) -> dict | None:
    """The recorded result of a finished step whose files are intact, else None (after saying why, on
    stderr, when files it recorded are missing or changed: the step is done again)."""
    found, record = store.load_step(name)
    if not found:
        return None
    problem = (
        _kept_files(store, name, record.get("files"))
        if isinstance(record, dict)
        else "its record is not a step's"
    )
    if problem is not None:
        print(
            f"resuming: the kept {name} step in {store.directory} is not whole ({problem}); doing it again",
            file=sys.stderr,
            flush=True,
        )
        return None
    return record


def _fresh_folder(store: chunk_store.ChunkStore, name: str) -> Path:
    """An empty ``.partial/NAME`` for a step about to run (whatever an interrupted attempt left there
    is removed)."""
    folder = store.folder(name)
    shutil.rmtree(folder)
    folder.mkdir()
    return folder


def trained_step(
    config: TrainConfig,
    store: chunk_store.ChunkStore,
    progress: bool,
    quiet: bool,
    checkpoint_minutes: float = CHECKPOINT_MINUTES,
) -> dict:
    """The training step: kept from an interrupted run of the same config, or run now (continuing
    from the last training checkpoint kept, if any) and kept in ``.partial/train`` (the model, its
    settings, the learning curve) before anything else runs."""
    record = _kept_step(store, TRAIN_STEP)
    folder = store.directory / TRAIN_STEP
    if record is not None:
        print(
            f"resuming: {config.algorithm} was trained for {record['timesteps']:,} timesteps by an "
            f"interrupted run of this config (kept in {folder}); not training again",
            file=sys.stderr,
            flush=True,
        )
        return {**record, "model": folder / learned.MODEL_FILE}
    if store.finished() or set(store.finished_steps()) - {checkpoints.STEP}:
        store.discard()  # made with a kept model that is no longer whole
    try:
        trained = train(
            config,
            _fresh_folder(store, TRAIN_STEP),
            progress=progress,
            store=store,
            checkpoint_minutes=checkpoint_minutes,
        )
    except KeyboardInterrupt as interrupted:  # (its text ends the command's one line on stderr)
        kept = checkpoints.latest(store)
        if kept is None:
            store.discard()  # nothing was recorded: what the interrupted step wrote is no work to keep
            interrupted.args = (
                f"while training, before its first checkpoint (one every {checkpoint_minutes:g} "
                "minutes): no training was kept; the same command trains again from the start "
                f"({config.total_timesteps:,} timesteps)",
            )
        else:
            interrupted.args = (
                f"while training: its checkpoint at {kept['timesteps']:,} of "
                f"{config.total_timesteps:,} timesteps is kept in {store.directory}; rerun the same "
                "command to continue from there (the same result as a run without a stop)",
            )
        raise
    record = {
        key: trained[key] for key in ("seconds", "curve_scoring_seconds", "timesteps", "curve", "exact_curve")
    }
    record["files"] = _record(folder, trained["written"])
    store.save_step(TRAIN_STEP, record)
    checkpoints.discard(store)  # the finished model replaces the checkpoints
    if not quiet:
        print(
            f"{config.name}: trained {config.algorithm} for {trained['timesteps']:,} timesteps "
            f"on {config.n_envs} tables in {trained['seconds']:.1f} s "
            f"({trained['timesteps'] / trained['seconds']:,.0f} steps/s)"
        )
    return {
        **record,
        "model": trained["model"],
        "model_object": trained["model_object"],
        "normalizer": trained["normalizer"],
    }


def discovery_step(config: TrainConfig, store: chunk_store.ChunkStore, trained: dict) -> dict:
    """The discovery scoring (``discovery:`` configs): kept from an interrupted run, or run now on the
    trained model (in memory, or loaded from ``.partial/train``: the same weights and statistics,
    bit for bit) and kept in ``.partial/discovery``."""
    record = _kept_step(store, DISCOVERY_STEP)
    if record is not None:
        return record
    model, normalizer = trained.get("model_object"), trained.get("normalizer")
    if model is None:  # resumed after training: the kept model, checked against its recorded SHA-256
        kept = learned.Sb3Policy(model=str(trained["model"]))
        model, normalizer = kept.actor.model, kept.actor.normalizer
    folder = _fresh_folder(store, DISCOVERY_STEP)
    try:
        result, files = run_discovery(
            config, model, normalizer, folder, trained["exact_curve"], trained.get("seconds")
        )
    except KeyboardInterrupt as interrupted:  # (its text ends the command's one line on stderr)
        interrupted.args = (
            f"while scoring the trained model (discovery): the trained model is kept in "
            f"{store.directory}; rerun the same command to score and evaluate it without training "
            "again",
        )
        raise
    record = {"result": result, "files": _record(folder, files)}
    store.save_step(DISCOVERY_STEP, record)
    return record


def _copy_kept(store: chunk_store.ChunkStore, step: str, files: list[list[str]], into: Path) -> list[Path]:
    """Copy a kept step's files into the staging folder ``into``, in the order they were written."""
    copied = []
    for name, _ in files:  # (checked by _kept_files, or written by this run)
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store.inside(name, under=step), target)
        copied.append(target)
    return copied


# ---------------------------------------------------------------------------------------------- main
OUTPUT_NAMES = (
    "model.zip",
    "env.json",
    "vecnormalize.pkl",
    "config.yaml",
    "learning_curve.csv",
    "learning_curve.png",
    "evaluation",
    "discovery",
    "SHA256SUMS",
)
"""What a training run writes in its folder (a reused folder may hold only these)."""


def main(
    config_path: str,
    out: str | None = None,
    as_json: bool = False,
    backend: str = "serial",
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool | None = None,
    checkpoint_minutes: float = CHECKPOINT_MINUTES,
) -> dict:
    """``pb-gym train``: load and validate the config, train, save, evaluate on held-out seeds (the
    evaluation runs on ``backend``, as ``pb-gym evaluate``; training is always local).

    Resumable, as ``pb-gym evaluate``: each finished step is kept in ``OUT/.partial`` (the trained model,
    the discovery scoring, every finished chunk of the held-out evaluation) with the run's config and
    seeds, and a rerun of the same config into the same folder does only what is missing (``resume``:
    None resumes a matching unfinished run, False discards it; True the same as None). The outputs are
    the same, file for file, resumed or not, except the timings of the evaluation report. A run of
    another config refuses to mix with the kept work
    (:class:`pb_gym.experiments.common.chunk_store.ResumeError`).
    Training itself keeps a checkpoint every ``checkpoint_minutes`` (0: never) and continues from the
    last one: the same trained model, bit for bit (:mod:`pb_gym.experiments.train.checkpoint`).
    """
    if (
        isinstance(checkpoint_minutes, bool)
        or not isinstance(checkpoint_minutes, (int, float))
        or not (0 <= checkpoint_minutes < math.inf)
    ):
        raise ConfigError(
            f"checkpoint_minutes={checkpoint_minutes!r} is not allowed; allowed: a number "
            ">= 0 (0: no checkpoints)"
        )
    learned.require_rl("training an agent")  # one line before anything is read, not a traceback mid-load
    config = load(config_path, TrainConfig)
    note = episode_note(config)
    if note is not None:
        print(note, file=sys.stderr, flush=True)
    folder = Path(out) if out is not None else Path("out/train") / config.name
    # checked before training; the finished steps are kept in FOLDER/.partial, and the outputs are
    # written into a staging folder beside it, moved into place whole at the end
    # (pb_gym.experiments.common.outputs)
    destination = outputs.prepare(folder, OUTPUT_NAMES)
    store = outputs.chunk_store(
        destination, {"study": "train", "config": config.model_dump(mode="json")}, resume
    )
    assert destination is not None and store is not None  # (train always writes to a folder)
    progress = not as_json and sys.stderr.isatty()
    trained = trained_step(config, store, progress, quiet=as_json, checkpoint_minutes=checkpoint_minutes)
    discovery = discovery_step(config, store, trained) if config.discovery is not None else None
    study = evaluation_study(config, trained["model"])
    kept = (
        "the trained model and its discovery scoring are" if discovery is not None else "the trained model is"
    )
    try:
        report = run_study(
            study, progress=not as_json, backend=backend, scheduler=scheduler, workers=workers, store=store
        )
    except KeyboardInterrupt as interrupted:  # (its text ends the command's one line on stderr)
        interrupted.args = (
            f"{kept} kept in {store.directory}, with the held-out evaluation's finished chunks; "
            "rerun the same command to finish it without training again",
        )
        raise
    except ChunkError as error:
        raise ChunkError(
            f"{error}. {kept[0].upper()}{kept[1:]} kept in {store.directory}: rerun "
            "the same command to evaluate it without training again"
        ) from error.__cause__
    profit = profit_per_hand(report)
    with destination.staging() as staged:
        files = _copy_kept(store, TRAIN_STEP, trained["files"], staged)
        if discovery is not None:
            files += _copy_kept(store, DISCOVERY_STEP, discovery["files"], staged / "discovery")
        files += write_outputs(report, staged / "evaluation")
        (staged / "evaluation" / "profit_per_hand.json").write_text(strict_json.dumps(profit, indent=2))
        files.append(staged / "evaluation" / "profit_per_hand.json")
        files.append(learned.write_manifest(staged, files))
    written = [str(destination.final_path(p, staged)) for p in files]
    model_path = destination.final / learned.MODEL_FILE
    if not as_json:
        print()
        print_report(report)
        print_profit(profit, config.env.unit)
        if discovery is not None:
            from pb_gym.experiments.benchmark import discovery as discovery_study

            print()
            print(discovery_study.report(discovery["result"]))
        print(outputs.wrote_line(written))
    last = trained["curve"][-1] if trained["curve"] else {}
    result = {
        "name": config.name,
        "algorithm": config.algorithm,
        "timesteps": trained["timesteps"],
        "train_seconds": trained["seconds"],
        "out": str(folder),
        "model": str(model_path),
        "final_curve_point": last,
        "evaluation": json_report(report),
        "profit_per_hand": profit,
        "written": written,
    }
    if discovery is not None:
        result["discovery"] = discovery["result"]
        result["curve_scoring_seconds"] = trained["curve_scoring_seconds"]
    return result


__all__ = ["TrainConfig", "main", "train", "evaluation_study", "profit_per_hand", "ConfigError"]
