"""``pb-gym score --task Session-v0``: a policy scored on a session task from the command line, as
``pb_gym.benchmark.score`` scores it."""

import json
import re
import textwrap

import pytest

from pb_gym import benchmark
from pb_gym.experiments import cli


@pytest.fixture
def tie_module(tmp_path, monkeypatch):
    (tmp_path / "session_tie.py").write_text(
        textwrap.dedent("""\
            import numpy as np
            from pb_gym import benchmark
            TIE5 = benchmark.action_index("Session-v0", "tie", 5)
            def policy(obs):
                return np.full(len(obs), TIE5)
            """)
    )
    monkeypatch.chdir(tmp_path)  # (a module of the current folder, as for a Discover task)
    monkeypatch.syspath_prepend(str(tmp_path))
    import session_tie

    return session_tie


def test_a_session_task_is_scored_as_the_api_scores_it(tie_module, capsys):
    argv = ["score", "session_tie:policy", "--task", "Session-v0", "--sessions", "2000", "--exact", "--json"]
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = benchmark.score(tie_module.policy, "Session-v0", sessions=2000, exact=True)
    assert printed["p_goal"] == expected["p_goal"] and printed["exact"] == expected["exact"]
    # the tie at 5 every hand is what PPO settles on: 0.8156 of the optimum, exactly
    assert printed["exact"]["normalized_score"] == pytest.approx(0.815606828509264, abs=1e-12)
    assert printed["policy"] == "session_tie:policy" and printed["task"] == "pb_gym/Session-v0"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--task", "Session-v0", "--tables", "4"],
         r"--tables: not for a session task \(pb_gym/Session-v0\); allowed: --sessions and --exact"),
        (["--task", "Discover-v0", "--sessions", "10"], r"--sessions: not for a Discover task "
         r"\(pb_gym/Discover-v0\); allowed: --tables and --hands"),
        (["--task", "Session-v9"], r"argument --task: task='Session-v9'"),
    ],
)  # fmt: skip
def test_options_of_the_other_kind_of_task_are_one_line_errors(tie_module, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", "session_tie:policy", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 or "usage:" in err
    assert re.search(message, err), err


def test_a_plain_sb3_model_of_the_session_env_is_scored_and_a_foreign_one_refused(tmp_path, capsys):
    """A model.zip that SB3 saved from the task's env is played deterministically (its spaces checked);
    one of another env's spaces is one line naming them."""
    pytest.importorskip("stable_baselines3")
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    model = PPO(
        "MlpPolicy", make_vec_env("pb_gym/Session-v0", n_envs=2, seed=0), n_steps=32, batch_size=64, seed=0
    )
    model.learn(64)
    model.save(tmp_path / "session.zip")
    argv = [
        "score",
        str(tmp_path / "session.zip"),
        "--task",
        "Session-v0",
        "--sessions",
        "500",
        "--exact",
        "--json",
    ]
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = benchmark.score(
        lambda obs: model.predict(obs, deterministic=True)[0], "Session-v0", sessions=500, exact=True
    )
    assert printed["exact"] == expected["exact"] and printed["p_goal"] == expected["p_goal"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", str(tmp_path / "session.zip"), "--task", "SessionBold-v0"])
    assert exit_info.value.code == 2
    assert "not a model of pb_gym/SessionBold-v0's env (action space" in capsys.readouterr().err
