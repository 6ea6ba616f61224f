"""The bet catalog: every bet as data, one column over the hand classes.

A bet (:class:`Bet`: a paytable of rows ``outcome predicate -> pays`` over the outcome fields of the
finished hand, with its source) and the reading of one from a plain dict (:func:`bet_from_dict`) are
in :mod:`pb_gym.bet_definitions`, whose names this module exports too. Every bet is one column of net
wins over the 1,600 hand classes (:meth:`Bet.column`), settled by one lookup and priced exactly by
:func:`pb_gym.exact.hand_class_expectations` (one walk over the shoe's multisets serves every bet); a
suited bet, one column over the suit classes, by :mod:`pb_gym.suited`.

The catalog (:func:`catalog`) holds the seven spots of :data:`pb_gym.rules.BETS`, built from a
:class:`~pb_gym.rules.Rules` (banker variant, commission, tie and side-bet pays), then the published side
bets of :data:`pb_gym.catalog_entries.SIDE_BET_DEFINITIONS`, each with the source of its paytable.
A new bet is one entry there (or a user's dict passed to :func:`bet_from_dict`). The bet columns of a
table, the one place they are decided, are its :class:`TableBets`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from pb_gym import rules as R
from pb_gym import suited as suited_odds
from pb_gym.bet_definitions import FIELDS as FIELDS
from pb_gym.bet_definitions import NO_VALUE as NO_VALUE
from pb_gym.bet_definitions import SUIT_FIELDS as SUIT_FIELDS
from pb_gym.bet_definitions import Bet as Bet
from pb_gym.bet_definitions import PayRow as PayRow
from pb_gym.bet_definitions import bet_from_dict as bet_from_dict
from pb_gym.bet_definitions import field_values as field_values
from pb_gym.bet_definitions import suit_field_values as suit_field_values
from pb_gym.catalog_entries import SIDE_BET_DEFINITIONS
from pb_gym.rules import Rules

# --------------------------------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------------------------------
RULES_SOURCE = "pb_gym.rules.Rules (the rule sheets in the README's rules section)"


def rules_bets(rules: Rules | None = None) -> tuple[Bet, ...]:
    """The seven spots of :data:`pb_gym.rules.BETS` as catalog bets, paid as ``rules`` says (their
    columns equal :meth:`Rules.payoff_matrix`)."""
    rules = rules or Rules()
    push = {"when": {"winner": "tie"}, "pays": "push", "label": "tie pushes"}
    if rules.banker_variant == "standard":
        banker = [
            {
                "when": {"winner": "banker"},
                "pays": 1.0 - float(rules.commission),
                "label": f"banker win ({float(rules.commission):g} commission)",
            }
        ]
    elif rules.banker_variant == "no-commission":
        banker = [
            {"when": {"winner": "banker", "banker_total": [0, 1, 2, 3, 4, 5, 7, 8, 9]}, "pays": 1},
            {
                "when": {"winner": "banker", "banker_total": 6},
                "pays": 0.5,
                "label": "banker win with 6 pays 1:2",
            },
        ]
    else:
        banker = [
            {"when": {"winner": "banker", "banker_cards": 2}, "pays": 1},
            {
                "when": {"winner": "banker", "banker_cards": 3, "banker_total": [0, 1, 2, 3, 4, 5, 6, 8, 9]},
                "pays": 1,
            },
            {
                "when": {"winner": "banker", "banker_cards": 3, "banker_total": 7},
                "pays": "push",
                "label": "banker three-card 7 pushes (EZ)",
            },
        ]
    definitions: list[dict] = [
        {"name": "banker", "title": f"Banker ({rules.banker_variant})", "rows": banker + [push]},
        {"name": "player", "title": "Player", "rows": [{"when": {"winner": "player"}, "pays": 1}, push]},
        {"name": "tie", "title": "Tie", "rows": [{"when": {"winner": "tie"}, "pays": rules.tie_pays}]},
        {
            "name": "player_pair",
            "title": "Player Pair",
            "rows": [{"when": {"player_pair": True}, "pays": rules.pair_pays}],
        },
        {
            "name": "banker_pair",
            "title": "Banker Pair",
            "rows": [{"when": {"banker_pair": True}, "pays": rules.pair_pays}],
        },
        {
            "name": "dragon7",
            "title": "Dragon 7",
            "rows": [
                {
                    "when": {"winner": "banker", "banker_total": 7, "banker_cards": 3},
                    "pays": rules.dragon7_pays,
                }
            ],
        },
        {
            "name": "panda8",
            "title": "Panda 8",
            "rows": [
                {
                    "when": {"winner": "player", "player_total": 8, "player_cards": 3},
                    "pays": rules.panda8_pays,
                }
            ],
        },
    ]
    return tuple(bet_from_dict({**d, "source": RULES_SOURCE}) for d in definitions)


@functools.lru_cache(maxsize=1)
def _side_bets() -> tuple[Bet, ...]:
    return tuple(
        bet_from_dict(definition) for definition in SIDE_BET_DEFINITIONS + suited_odds.catalog_definitions()
    )


@functools.lru_cache(maxsize=64)
def _catalog(rules: Rules) -> dict[str, Bet]:
    bets = rules_bets(rules) + _side_bets()
    return {bet.name: bet for bet in bets}


def catalog(rules: Rules | None = None) -> dict[str, Bet]:
    """Every bet of the catalog by name: the seven spots of :data:`pb_gym.rules.BETS` paid as
    ``rules`` says (default :class:`Rules`), then the published side bets. A fresh dict each call."""
    return dict(_catalog(rules or Rules()))


def bet_names(rules: Rules | None = None) -> tuple[str, ...]:
    """The names of the catalog's bets, in catalog order."""
    return tuple(_catalog(rules or Rules()))


def get_bet(name: str | Bet, rules: Rules | None = None) -> Bet:
    """The catalog bet called ``name`` (a :class:`Bet` is returned as it is)."""
    if isinstance(name, Bet):
        return name
    bets = _catalog(rules or Rules())
    if name not in bets:
        raise ValueError(f"unknown bet {name!r}; allowed: {', '.join(bets)}")
    return bets[name]


def resolve(bets: Iterable[str | Bet] | str | None = None, rules: Rules | None = None) -> tuple[Bet, ...]:
    """Bets from names (or :class:`Bet` objects); ``None`` is the whole catalog."""
    if bets is None:
        return tuple(_catalog(rules or Rules()).values())
    if isinstance(bets, (str, Bet)):
        bets = [bets]
    return tuple(get_bet(bet, rules) for bet in bets)


def pay_matrix(bets: Iterable[str | Bet] | str | None = None, rules: Rules | None = None) -> np.ndarray:
    """Net win per unit staked, ``(1600, k)``: row = hand class, column = bet (``None``: every catalog
    bet settled by rank, in catalog order: :func:`rank_bets`). ``pay_matrix(rules.BETS, r)`` equals
    ``r.payoff_matrix()``. With a suited bet among them, ``(6400, k)``: row = suited hand class
    (:meth:`Bet.suited_column`)."""
    chosen = rank_bets(rules) if bets is None else resolve(bets, rules)
    if any(bet.suited for bet in chosen):
        return np.stack([bet.suited_column() for bet in chosen], axis=1)
    return np.stack([bet.column() for bet in chosen], axis=1)


def rank_bets(rules: Rules | None = None) -> tuple[Bet, ...]:
    """The catalog's bets settled by rank (every bet but the suited ones), in catalog order."""
    return tuple(bet for bet in _catalog(rules or Rules()).values() if not bet.suited)


def split_composition(composition: np.ndarray | Sequence) -> tuple[np.ndarray, np.ndarray | None]:
    """A composition by rank ``(..., 13)`` as ``(it, None)``, or one by rank and suit ``(..., 13, 4)`` as
    ``(its counts by rank, it)``."""
    array = np.asarray(composition)
    if array.ndim >= 2 and array.shape[-2:] == (R.N_RANKS, suited_odds.N_SUITS):
        return array.sum(axis=-1), array
    return array, None


def _suited_only(bets: Sequence[Bet], suited: np.ndarray | None) -> np.ndarray:
    """``(..., k)`` exact EVs of suited bets from a suited composition."""
    if suited is None:
        names = ", ".join(bet.name for bet in bets)
        raise ValueError(
            f"{names}: a bet on suits is priced from a composition by rank and suit, shape (..., "
            f"{R.N_RANKS}, {suited_odds.N_SUITS}) (pb_gym.suited.suited_shoe, engine.unseen_by_suit)"
        )
    return suited_odds.suit_class_probabilities(suited) @ np.stack([bet.column() for bet in bets], axis=1)


def expected_values(
    composition: np.ndarray | Sequence,
    bets: Iterable[str | Bet] | str | None = None,
    rules: Rules | None = None,
) -> np.ndarray:
    """Exact EV per unit staked of each bet for the next hand dealt from ``composition`` (13 counts by
    rank on the last axis, or counts by rank and suit ``(..., 13, 4)``; any leading axes), shape
    ``(..., k)``. One walk per composition prices every bet
    (:func:`pb_gym.exact.hand_class_expectations`); the suited bets (which need the composition by
    suit) by :mod:`pb_gym.suited`'s closed form. ``bets=None``: every catalog bet for a composition by
    rank and suit, every bet settled by rank (:func:`rank_bets`) for one by rank."""
    from pb_gym import exact  # exact imports nothing from here; the late import keeps the core light

    by_rank, by_suit = split_composition(composition)
    if bets is None:
        chosen = resolve(None, rules) if by_suit is not None else rank_bets(rules)
    else:
        chosen = resolve(bets, rules)
    if not any(bet.suited for bet in chosen):
        return exact.hand_class_expectations(by_rank, pay_matrix(chosen, rules))
    by_rank_bets = [bet for bet in chosen if not bet.suited]
    suited_bets = [bet for bet in chosen if bet.suited]
    suited_ev = _suited_only(suited_bets, by_suit)
    out = np.empty(suited_ev.shape[:-1] + (len(chosen),))
    if by_rank_bets:
        rank_ev = exact.hand_class_expectations(by_rank, pay_matrix(by_rank_bets, rules))
        out[..., [i for i, bet in enumerate(chosen) if not bet.suited]] = rank_ev
    out[..., [i for i, bet in enumerate(chosen) if bet.suited]] = suited_ev
    return out


def combination_counts(
    bet: str | Bet, composition: np.ndarray | Sequence, rules: Rules | None = None
) -> dict[str, int]:
    """Exact counts of ordered 6-card deals (the published combination convention) matching each row
    of ``bet``'s paytable, by row label, plus ``"loss"`` for the hands no row matches and ``"total"``.
    A suited bet's, for a composition by rank and suit ``(13, 4)``: of the first four cards, unordered
    within each hand (the published perfect-pair convention, :func:`pb_gym.suited.perfect_pair_counts`)."""
    from pb_gym import exact

    bet = get_bet(bet, rules)
    by_rank, by_suit = split_composition(composition)
    if bet.suited:
        _suited_only([bet], by_suit)  # (the error for a composition by rank alone)
        assert by_suit is not None
        counts = np.array(suited_odds.suit_class_counts(by_suit), dtype=np.int64)
    else:
        counts = exact.hand_class_counts(by_rank)
    out: dict[str, int] = {}
    matched = np.zeros(counts.shape[0], dtype=bool)
    for row, mask in zip(bet.rows, bet.row_masks(), strict=True):
        out[row.label] = int(counts[mask].sum())
        matched |= mask
    out["loss"] = int(counts[~matched].sum())
    out["total"] = int(counts.sum())
    return out


# --------------------------------------------------------------------------------------------------
# The bet columns of a table: the one place they are decided
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TableBets:
    """The bet columns of a table: the seven spots of :data:`pb_gym.rules.BETS` first, always in their
    places (so ``BETS.index(name)`` is a column everywhere), then the ``extra`` bets it offers -- catalog
    side bets or a user's own (:func:`bet_from_dict`) -- in the order given. The env, its session and
    ``pb-gym evaluate`` take their stake columns, payoff matrix and exact EVs from here.

    Build it with :func:`table_bets` (which validates the names); ``offered`` are the bets a player may
    stake at this table (banker, player, tie, the rules' offered side bets, then the extra bets)."""

    rules: Rules
    extra: tuple[Bet, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """Name of each stake column: :data:`pb_gym.rules.BETS`, then the extra bets."""
        return R.BETS + tuple(bet.name for bet in self.extra)

    @property
    def n_columns(self) -> int:
        return R.N_BETS + len(self.extra)

    @property
    def offered(self) -> tuple[str, ...]:
        """The bets offered at this table, in column order."""
        return self.rules.offered_bets + tuple(bet.name for bet in self.extra)

    def column(self, name: str) -> int:
        """The stake column of an offered bet; ValueError listing the offered bets otherwise."""
        if name not in self.offered:
            raise ValueError(f"bet {name!r} is not offered at this table; offered: {', '.join(self.offered)}")
        return self.columns.index(name)

    def bet(self, name: str) -> Bet:
        """The catalog :class:`Bet` of a column (the seven spots paid as the rules say)."""
        extra = {bet.name: bet for bet in self.extra}
        return extra[name] if name in extra else get_bet(name, self.rules)

    def pay_matrix(self) -> np.ndarray:
        """Net win per unit ``(1600, n_columns)``; with no extra bet exactly
        :meth:`pb_gym.rules.Rules.payoff_matrix` (the same bits)."""
        base = self.rules.payoff_matrix()
        if not self.extra:
            return base
        extra = pay_matrix(self.extra, self.rules)
        if self.suited:  # (6400, n_columns): by suited hand class
            base = np.tile(base, (R.N_SUIT_CLASSES, 1))
        return np.concatenate([base, extra], axis=1)

    @functools.cached_property  # (the env asks every step; the bets are frozen, so it never changes)
    def suited(self) -> bool:
        """Whether a bet of this table is settled on suits (its shoes must track them, its payoff matrix
        is by suited hand class: :data:`pb_gym.rules.N_SUITED_CLASSES` rows)."""
        return any(bet.suited for bet in self.extra)

    def expected_values(self, composition: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """Exact EV per unit of every column for the next hand from ``composition`` ``(n, 13)`` (or
        ``(n, 13, 4)`` by rank and suit, which a suited bet needs): ``(n, n_columns)``; the seven spots
        by :func:`pb_gym.exact.expected_values` (the same bits as a table without extra bets), the extra
        bets by :func:`expected_values`. ``columns`` (a boolean per column): the extra bets priced only
        where True, 0 elsewhere, and the seven spots (one walk prices them all) only where one of them
        is; the same bits where priced (an EV-weighted reward needs the staked columns alone)."""
        from pb_gym import exact

        by_rank = split_composition(composition)[0]
        if not self.extra:
            return exact.expected_values(by_rank, self.rules)
        priced = np.ones(self.n_columns, dtype=bool) if columns is None else np.asarray(columns, dtype=bool)
        out = np.zeros(by_rank.shape[:-1] + (self.n_columns,))
        if priced[: R.N_BETS].any():
            out[..., : R.N_BETS] = exact.expected_values(by_rank, self.rules)
        extra = np.flatnonzero(priced[R.N_BETS :])
        if extra.size and not self.suited:  # (their columns at hand: expected_values' checks once)
            out[..., R.N_BETS + extra] = exact.hand_class_expectations(by_rank, self._extra_columns[:, extra])
        elif extra.size:
            bets = [self.extra[i] for i in extra]
            out[..., R.N_BETS + extra] = expected_values(composition, bets, self.rules)
        return out

    @functools.cached_property
    def _extra_columns(self) -> np.ndarray:
        """The extra bets' net wins over the hand classes ``(1600, len(extra))`` (a table with no bet
        on suits): what :func:`expected_values` prices them with, built once."""
        return pay_matrix(self.extra, self.rules)


def _user_bet(bet: object, where: str) -> Bet:
    if isinstance(bet, Bet):
        return bet
    if isinstance(bet, Mapping):
        return bet_from_dict(bet)
    raise ValueError(
        f"{where}: {bet!r} is not allowed; allowed: a bet name, a pb_gym.catalog.Bet or a "
        "definition {name, rows: [{when, pays}]}"
    )


def user_bets(custom: Iterable[Bet | Mapping]) -> dict[str, Bet]:
    """The user's bets ``custom`` (:class:`Bet` objects or definitions for :func:`bet_from_dict`), each
    validated, by name; a name the catalog or an earlier one already has is a ValueError."""
    user: dict[str, Bet] = {}
    for definition in custom:
        bet = _user_bet(definition, "custom_bets")
        if bet.name in _catalog(Rules()) or bet.name in user:
            raise ValueError(
                f"custom bet {bet.name!r}: the name is taken (by the catalog or an earlier "
                "custom bet); choose another"
            )
        user[bet.name] = bet
    return user


def split_side_bets(
    side_bets: Iterable[str | Bet | Mapping] | str, custom: Iterable[Bet | Mapping] = ()
) -> tuple[tuple[str, ...], tuple[Bet, ...]]:
    """Split a table's ``side_bets`` into the rules' own side bets (:data:`pb_gym.rules.SIDE_BETS`, for
    :attr:`Rules.side_bets`) and the extra bets: other catalog side bets by name, the user's bets by
    name (defined in ``custom``) or given as a :class:`Bet` / a definition dict. Unknown names, the main
    bets and repeats are a ValueError naming the allowed bets."""
    if isinstance(side_bets, (str, Bet)) or isinstance(side_bets, Mapping):
        side_bets = [side_bets]
    user = user_bets(custom)
    catalog_side = tuple(name for name in _catalog(Rules()) if name not in R.MAIN_BETS)
    allowed = catalog_side + tuple(user)
    own: list[str] = []
    extra: list[Bet] = []
    seen: set[str] = set()
    for item in side_bets:
        if isinstance(item, str):
            if item in R.SIDE_BETS:
                bet_name = item
                own.append(item)
            elif item in user:
                bet_name = item
                extra.append(user[item])
            elif item in catalog_side:
                bet_name = item
                extra.append(_catalog(Rules())[item])
            else:
                raise ValueError(f"side_bets: unknown bet {item!r}; allowed: {', '.join(allowed)}")
        else:
            bet = _user_bet(item, "side_bets")
            if bet.name in R.BETS:
                raise ValueError(
                    f"side_bets: a bet of your own may not be called {bet.name!r} (a rules "
                    f"bet spot); choose another name"
                )
            bet_name = bet.name
            extra.append(bet)
        if bet_name in seen:
            raise ValueError(f"side_bets: {bet_name!r} is given twice; each side bet at most once")
        seen.add(bet_name)
    return tuple(own), tuple(extra)


def table_bets(
    rules: Rules, extra: Iterable[str | Bet | Mapping] = (), custom: Iterable[Bet | Mapping] = ()
) -> TableBets:
    """The :class:`TableBets` of a table with ``rules`` offering the ``extra`` bets too (catalog side
    bets not in :data:`pb_gym.rules.SIDE_BETS`, or user bets; see :func:`split_side_bets`)."""
    own, bets = split_side_bets(tuple(extra), custom)
    if own:
        raise ValueError(
            f"extra bets: {', '.join(own)} are rules side bets: offer them with Rules(side_bets=...)"
        )
    return TableBets(rules, bets)
