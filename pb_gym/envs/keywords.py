"""The environments' keyword arguments, written once: the fields of :class:`EnvConfig`.

:class:`~pb_gym.envs.punto_banco.PuntoBancoEnv` and :class:`~pb_gym.envs.vector.PuntoBancoVectorEnv`
take the same settings, either as one :class:`EnvConfig` (``config=``) or as its keywords, which go to
:class:`EnvConfig` unchanged: an unknown keyword is the ``TypeError`` of any Python callable, a bad value
the config's ``ValueError`` naming it. Each env's signature is made from :class:`EnvConfig`'s
(:func:`with_config_keywords`), so ``help()``, ``inspect.signature`` and IDEs that read it list every
keyword with its default, and a new option is one field of :class:`EnvConfig`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pb_gym import progress
from pb_gym.envs.config import EnvConfig

Init = TypeVar("Init", bound=Callable[..., None])


def env_config(
    config: EnvConfig | None, options: Mapping[str, Any], defaults: Mapping[str, Any]
) -> EnvConfig:
    """``config``, or the :class:`EnvConfig` of ``options`` (the env's own ``defaults`` first). The
    env's kernels run next: the first run of a version compiles them, and says so
    (:func:`pb_gym.progress.note_compiling`)."""
    progress.note_compiling()
    if config is None:
        return EnvConfig(**{**defaults, **options})
    if not isinstance(config, EnvConfig):
        raise TypeError(f"config must be an EnvConfig (got {type(config).__name__})")
    if options:
        raise TypeError(f"give config or its keywords, not both (got config and {', '.join(options)})")
    return config


def with_config_keywords(defaults: Mapping[str, Any] | None = None) -> Callable[[Init], Init]:
    """Give an env's ``__init__(self, ..., config=None, **options)`` the signature that lists
    :class:`EnvConfig`'s keywords in place of ``**options`` (keyword-only, with their defaults; those
    of ``defaults`` replaced: the env's own)."""
    changed = dict(defaults or {})

    def decorate(init: Init) -> Init:
        own = list(inspect.signature(init).parameters.values())
        keywords = [
            p.replace(default=changed.get(name, p.default))
            for name, p in inspect.signature(EnvConfig).parameters.items()
        ]
        init.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [p for p in own if p.kind is not inspect.Parameter.VAR_KEYWORD] + keywords
        )
        return init

    return decorate
