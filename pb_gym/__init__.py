"""pb-gym: Punto Banco (casino baccarat) as a research instrument.

The core: :mod:`pb_gym.rules` (the rules as data), :mod:`pb_gym.engine` (the vectorized shoe engine),
:mod:`pb_gym.exact` (exact odds for any shoe composition) and :mod:`pb_gym.envs` (the Gymnasium
environments). Above it, in the same namespace: :mod:`pb_gym.agents` (betting systems and learned agents)
and :mod:`pb_gym.experiments` (the studies and the ``pb-gym`` command line).

Importing :mod:`pb_gym` registers its Gymnasium ids and points numba's compile cache at pb-gym's folder
in the user's cache (``NUMBA_CACHE_DIR``, unless set: :mod:`pb_gym.kernel_cache`), and nothing heavier:
the names below load their modules on first use (PEP 562), so ``pb-gym``'s start-up, which imports this
package first, stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pb_gym import kernel_cache as _kernel_cache

__version__ = "0.1.0"
"""The package version, its one source: ``pyproject.toml`` reads it (``dynamic = ["version"]``) and
``pb-gym --version`` prints it."""

# before numba is imported: a compile cache per version and state of the sources, in the user's cache
_kernel_cache.configure(__version__)

import pb_gym.envs  # noqa: E402, F401  (registers pb_gym/PuntoBanco-v0 with Gymnasium)

if TYPE_CHECKING:
    from pb_gym.envs.punto_banco import PuntoBancoEnv
    from pb_gym.envs.vector import PuntoBancoVectorEnv
    from pb_gym.rules import BETS, OUTCOMES, RANKS, Rules

__all__ = ["BETS", "OUTCOMES", "RANKS", "PuntoBancoEnv", "PuntoBancoVectorEnv", "Rules", "__version__"]


def __getattr__(name: str) -> Any:
    value: Any
    # the imports are written out (not importlib) so that the import contracts see them
    if name in ("BETS", "OUTCOMES", "RANKS", "Rules"):
        from pb_gym import rules

        value = getattr(rules, name)
    elif name == "PuntoBancoEnv":
        from pb_gym.envs.punto_banco import PuntoBancoEnv as value
    elif name == "PuntoBancoVectorEnv":
        from pb_gym.envs.vector import PuntoBancoVectorEnv as value
    else:
        raise AttributeError(f"module 'pb_gym' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
