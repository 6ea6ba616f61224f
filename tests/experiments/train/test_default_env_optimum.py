"""The default env's optimum (docs/rl-libraries.md judges the observation-choice table against it):
the perfect bettor's exact EV per hand, the same whether summed from ``info_ev`` or played through the
env at one unit, and above any single count's."""

import numpy as np

from pb_gym.experiments.train import default_env_optimum


def test_the_perfect_bettor_bounds_hows_count_and_is_what_the_env_pays_it_at_one_unit():
    found = default_env_optimum.measure(tables=8, hands=120, seed=3)
    assert found["hands"] == 960 and found["episodes"] == 16  # 100-hand episodes: 8 end, 8 go on
    perfect, how = found["perfect"]["estimate"], found["how_dragon7"]["estimate"]
    assert perfect > 0 and perfect >= how  # the best positive spot, every hand, bounds any one count
    assert 0 < found["how_bet_share"]["estimate"] < 1
    share = found["positive_share"]["estimate"]
    assert 0 < share < 1
    assert share >= max(found[f"positive_share_{bet}"]["estimate"] for bet in ("dragon7", "panda8"))
    levels = default_env_optimum.measure_levels(tables=8, hands=120, seed=3)
    assert [row["stake"] for row in levels] == [1.0, 2.0, 5.0, 10.0, 25.0]
    # one unit on the best positive spot, through the env's own stakes, is the sum of max(0, EV)
    assert levels[0]["exact"]["estimate"] == perfect and levels[0]["episodes_ruined"] == 0
    assert np.isclose(levels[1]["exact"]["estimate"], 2 * perfect)  # not ruined at 2 units here
