"""pb-gym: Punto Banco (casino baccarat) as a research instrument.

The core: :mod:`pb_gym.rules` (the rules as data), :mod:`pb_gym.engine` (the vectorized shoe engine)
and :mod:`pb_gym.exact` (exact odds for any shoe composition).
"""

from pb_gym.rules import BETS, OUTCOMES, RANKS, Rules
import pb_gym.envs  # registers pb_gym/PuntoBanco-v0

__all__ = ["BETS", "OUTCOMES", "RANKS", "Rules", "__version__"]
__version__ = "0.1.0"
