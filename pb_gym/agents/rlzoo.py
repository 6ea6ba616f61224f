"""Run an RL Zoo (``rl_zoo3``) script with pb-gym's environments registered.

RL Zoo's ``train`` and ``enjoy`` take ``--gym-packages pb_gym``; ``record_video`` and
``record_training`` have no such option and look the environment up in Gymnasium's registry, where
``pb_gym/PuntoBanco-v0`` is only once :mod:`pb_gym` is imported. This runs any of them after that
import, with the same arguments::

    python -m pb_gym.agents.rlzoo record_video --algo ppo --env pb_gym/PuntoBanco-v0 -f logs -n 200
    python -m pb_gym.agents.rlzoo train --algo dqn --env pb_gym/PuntoBanco-v0 \
        --conf-file configs/rlzoo/dqn.yml

(needs the ``zoo`` extra: ``pip install -e '.[rl,zoo]'``).
"""

from __future__ import annotations

import runpy
import sys

SCRIPTS: tuple[str, ...] = ("train", "enjoy", "record_video", "record_training")


def main(argv: list[str] | None = None) -> None:
    """``argv``: the script name, then its arguments (default: ``sys.argv[1:]``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SCRIPTS:
        given = repr(argv[0]) if argv else "nothing"
        raise SystemExit(
            f"python -m pb_gym.agents.rlzoo SCRIPT [ARGS]: SCRIPT={given} is not allowed; "
            f"allowed: {', '.join(SCRIPTS)}"
        )
    import pb_gym  # noqa: F401  (registers pb_gym/PuntoBanco-v0)

    script = f"rl_zoo3.{argv[0]}"
    sys.argv = [script, *argv[1:]]
    runpy.run_module(script, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
