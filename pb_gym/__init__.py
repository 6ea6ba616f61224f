"""pb-gym: Punto Banco (casino baccarat) as a research instrument.

The core: :mod:`pb_gym.rules` (the rules as data), :mod:`pb_gym.engine` (the vectorized shoe engine)
and :mod:`pb_gym.exact` (exact odds for any shoe composition).
"""

import pb_gym.envs  # noqa: F401  (registers pb_gym/PuntoBanco-v0 with Gymnasium)
from pb_gym.rules import BETS, OUTCOMES, RANKS, Rules

__all__ = ["BETS", "OUTCOMES", "RANKS", "Rules", "__version__"]

__version__ = "0.1.0"
"""The package version, its one source: ``pyproject.toml`` reads it (``dynamic = ["version"]``) and
``pb-gym --version`` prints it."""
