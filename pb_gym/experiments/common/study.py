"""The command shell every chunked study shares (``pb-gym experiment counting|atlas|ruin``): load the
config, check the output folder, run with a store of finished chunks, write the files together, print
the report.

A study module keeps what is its own (the config schema, its ``run``, the report and the files it
writes) and builds its ``main`` with :func:`command`, so that the entry point's signature, the order of
those steps, and what a reused or interrupted output folder means, are written once
(:mod:`pb_gym.experiments.common.outputs`, :mod:`pb_gym.experiments.common.chunk_store`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from pb_gym.experiments.common import outputs
from pb_gym.experiments.common.yaml_config import Strict, load

ConfigT = TypeVar("ConfigT", bound=Strict)


class SerialOnly(ValueError):
    """A backend other than ``serial`` asked of a study that runs serially (the command line reports
    it as a usage error, before anything is computed)."""


def command(
    name: str,
    config_type: type[ConfigT],
    output_names: Sequence[str],
    run: Callable[..., dict],
    write: Callable[[dict, Path], Iterable[str | Path]],
    report: Callable[[dict], str],
    complete: Callable[[dict, ConfigT], dict] | None = None,
    identity: Callable[[ConfigT], dict] | None = None,
    serial: bool = False,
) -> Callable[..., dict]:
    """The ``main`` of the study ``name``, built from this study's parts.

    The function returned is called as ``main(config_path, out=None, as_json=False, backend="serial",
    scheduler=None, workers=None, resume=None)``. ``backend`` (``serial``, ``threads``, ``processes``,
    ``dask``), ``scheduler`` (a Dask address; None: a local cluster) and ``workers`` choose where the
    chunks run; the result is identical on every backend except the wall-clock times under
    ``"timings"``. A chunk that fails twice raises :class:`pb_gym.experiments.common.scale.ChunkError`
    before anything is written. In order:

    1. The YAML file ``config_path`` is loaded and validated as ``config_type``; ``out`` is checked
       before anything is computed (:func:`pb_gym.experiments.common.outputs.prepare`: it may hold only
       ``output_names`` and the finished chunks of an earlier run).
    2. ``run(config, backend, scheduler, workers, progress=..., store=...)`` computes the result (a
       ``serial`` study: ``run(config, progress=...)``, any other backend refused); its finished chunks
       are kept in ``out/.partial`` under the identity (study ``name``, validated config, pb-gym
       version; ``identity(config)`` replaces or adds keys: what the kept results depend on, where
       that is not the whole config), so a rerun resumes (``resume=False`` discards them).
    3. The result gets ``"config"`` (the path as given), then ``complete(result, config)`` adds what
       else the study records.
    4. ``write(result, folder)`` writes the files into a staging folder, moved into place together
       once it returns; ``result["files"]`` lists where they then lie.
    5. Unless ``as_json``, ``report(result)`` is printed. The result is returned.
    """

    def main(
        config_path: str,
        out: str | None = None,
        as_json: bool = False,
        backend: str = "serial",
        scheduler: str | None = None,
        workers: int | None = None,
        resume: bool | None = None,
    ) -> dict:
        config = load(config_path, config_type)
        destination = outputs.prepare(out, output_names)
        depends = {"study": name, "config": config.model_dump(mode="json")}
        if identity is not None:
            depends.update(identity(config))
        store = outputs.chunk_store(destination, depends, resume)
        if serial:
            if backend != "serial":
                raise SerialOnly(f"backend={backend!r}: the {name} study runs serially; allowed: serial")
            result = run(config, progress=not as_json)
        else:
            result = run(config, backend, scheduler, workers, progress=not as_json, store=store)
        result["config"] = str(config_path)
        if complete is not None:
            result = complete(result, config)
        if destination is not None:
            with destination.staging() as staged:
                written = list(write(result, staged))
            result["files"] = [str(destination.final_path(p, staged)) for p in written]
        if not as_json:
            print(report(result))
        return result

    main.__doc__ = (
        f"Run the {name} study from a YAML config (:class:`{config_type.__name__}`), print its report "
        f"unless ``as_json``, write {', '.join(output_names)} into ``out``; see "
        ":func:`pb_gym.experiments.common.study.command`."
    )
    return main


__all__ = ["SerialOnly", "command"]


def write_table_files(
    name: str, result: dict, folder: Path, fields: Sequence[str], rows: Iterable[dict], markdown: str
) -> list[Path]:
    """The three files of a one-table study under ``folder``: ``NAME.json`` (the result), ``NAME.csv``
    (``rows``, the columns ``fields``) and ``NAME.md`` (``markdown``); their paths."""
    import csv

    from pb_gym import strict_json

    (folder / f"{name}.json").write_text(strict_json.dumps(result, indent=1))
    with open(folder / f"{name}.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(fields))
        writer.writeheader()
        writer.writerows(rows)
    (folder / f"{name}.md").write_text(markdown + "\n")
    return [folder / f"{name}.{ext}" for ext in ("json", "csv", "md")]
