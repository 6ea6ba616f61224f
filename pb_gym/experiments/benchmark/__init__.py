"""The RL benchmark: a policy scored against the known optimum (:mod:`.discovery`, :mod:`.score`)
and the regret table of algorithms over seeds (:mod:`.regret_table`, ``pb-gym experiment benchmark``)."""
