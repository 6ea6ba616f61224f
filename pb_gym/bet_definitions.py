"""A bet as data: a paytable of rows over the outcome fields of the finished hand, read from a plain dict.

A bet is a *paytable*: rows ``outcome predicate -> pays`` over the finished hand. A predicate is a set
of conditions ``field: value`` (or ``field: [values]``), all of which must hold; ``pays`` is the net win
per unit staked (``1.5`` or ``"3:2"``), ``"push"`` (0) or ``"lose"`` (-1). A hand that no row matches
loses the stake. No hand may match two rows.

The fields are functions of the hand class (:func:`pb_gym.rules.hand_class`: the two totals, the two
card counts and the two pair flags), so every bet is one column of net wins over the 1,600 classes
(:meth:`Bet.column`). Fields:

=================  ====================  ==========================================================
field              values                meaning
=================  ====================  ==========================================================
winner             banker, player, tie   who won the hand
player_total       0..9                  the player's final total
banker_total       0..9                  the banker's final total
player_cards       2, 3                  cards in the player's final hand
banker_cards       2, 3                  cards in the banker's final hand
total_cards        4, 5, 6               cards in both hands
player_natural     true, false           the player's first two cards total 8 or 9
banker_natural     true, false           the banker's first two cards total 8 or 9
natural            true, false           either hand is a natural
winner_total       0..9                  the winning hand's total (on a tie: the tied total)
winner_cards       2, 3                  the winning hand's cards (no value on a tie)
loser_total        0..9                  the losing hand's total (no value on a tie)
loser_cards        2, 3                  the losing hand's cards (no value on a tie)
margin             0..9                  winning total minus losing total (0 on a tie)
player_pair        true, false           the player's first two cards are of one rank
banker_pair        true, false           the banker's first two cards are of one rank
pairs              0, 1, 2               how many of the two hands hold such a pair
player_perfect     true, false           the player's first two cards are identical in rank and suit
banker_perfect     true, false           the banker's first two cards are identical in rank and suit
perfect_pairs      0, 1, 2               how many of the two hands hold such a perfect pair
=================  ====================  ==========================================================

The last three are the *suit fields*: a bet that reads them is a suited bet (:attr:`Bet.suited`), its
rows read suit fields only, and it is one column over the :data:`pb_gym.rules.N_SUIT_CLASSES` suit
classes (tiled over the hand classes: :data:`pb_gym.rules.N_SUITED_CLASSES` rows), settled by a table
whose shoe tracks suits and priced exactly for a composition by rank and suit (``(..., 13, 4)``) by
:mod:`pb_gym.suited`. Bets on suits beyond the perfect pairs (Royal Match, colour pairs) are not in
the catalog: their paytables are not among the sources the project cites.

:mod:`pb_gym.catalog` holds the catalog of these bets and exports these names too.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping

import numpy as np

from pb_gym import rules as R

# --------------------------------------------------------------------------------------------------
# Outcome fields over the hand classes
# --------------------------------------------------------------------------------------------------
_BOOL = (False, True)
FIELDS: dict[str, tuple] = {
    "winner": R.WINNERS,
    "player_total": tuple(range(10)),
    "banker_total": tuple(range(10)),
    "player_cards": (2, 3),
    "banker_cards": (2, 3),
    "total_cards": (4, 5, 6),
    "player_natural": _BOOL,
    "banker_natural": _BOOL,
    "natural": _BOOL,
    "winner_total": tuple(range(10)),
    "winner_cards": (2, 3),
    "loser_total": tuple(range(10)),
    "loser_cards": (2, 3),
    "margin": tuple(range(10)),
    "player_pair": _BOOL,
    "banker_pair": _BOOL,
    "pairs": (0, 1, 2),
    "player_perfect": _BOOL,
    "banker_perfect": _BOOL,
    "perfect_pairs": (0, 1, 2),
}
"""Every outcome field a paytable row may test, with its allowed values."""
SUIT_FIELDS = ("player_perfect", "banker_perfect", "perfect_pairs")
"""The fields of the suit classes (:data:`pb_gym.rules.N_SUIT_CLASSES`): bit 0 the player's perfect
pair, bit 1 the banker's."""


@functools.lru_cache(maxsize=1)
def suit_field_values() -> dict[str, np.ndarray]:
    """Each suit field's value on each suit class, ``(4,)`` int arrays (booleans as 0/1)."""
    suit_class = np.arange(R.N_SUIT_CLASSES)
    player, banker = suit_class & 1, suit_class >> 1
    out = {"player_perfect": player, "banker_perfect": banker, "perfect_pairs": player + banker}
    for array in out.values():
        array.setflags(write=False)
    return out


NO_VALUE = -1
"""A field's code on hand classes where it has no value (the winner's cards on a tie)."""


@functools.lru_cache(maxsize=1)
def field_values() -> dict[str, np.ndarray]:
    """Each field's value on each hand class, ``(1600,)`` int arrays (winner: index in
    :data:`pb_gym.rules.WINNERS`; booleans as 0/1; :data:`NO_VALUE` where undefined)."""
    pt, bt, pn, bn, pp, bp = R.hand_class_fields(np.arange(R.N_HAND_CLASSES))
    winner = np.where(bt > pt, R.BANKER, np.where(pt > bt, R.PLAYER, R.TIE))
    tie = winner == R.TIE
    player_won = winner == R.PLAYER
    player_natural = (pn == 2) & (pt >= R.NATURAL_MIN)
    banker_natural = (bn == 2) & (bt >= R.NATURAL_MIN)
    values = {
        "winner": winner,
        "player_total": pt,
        "banker_total": bt,
        "player_cards": pn,
        "banker_cards": bn,
        "total_cards": pn + bn,
        "player_natural": player_natural,
        "banker_natural": banker_natural,
        "natural": player_natural | banker_natural,
        "winner_total": np.where(player_won, pt, bt),
        "winner_cards": np.where(tie, NO_VALUE, np.where(player_won, pn, bn)),
        "loser_total": np.where(tie, NO_VALUE, np.where(player_won, bt, pt)),
        "loser_cards": np.where(tie, NO_VALUE, np.where(player_won, bn, pn)),
        "margin": np.abs(pt - bt),
        "player_pair": pp,
        "banker_pair": bp,
        "pairs": pp.astype(int) + bp.astype(int),
    }
    out = {name: np.asarray(array).astype(np.int64) for name, array in values.items()}
    for array in out.values():
        array.setflags(write=False)
    return out


def _code(field: str, value: object) -> int:
    """A field value as the code of :func:`field_values` (winner names as indices, bools as 0/1)."""
    if field == "winner":
        return R.WINNERS.index(str(value))
    return int(value)  # type: ignore[call-overload]  # a checked int or bool


# --------------------------------------------------------------------------------------------------
# Bets
# --------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PayRow:
    """One row of a paytable: when every condition of ``when`` holds, the bet pays ``pays`` per unit.

    ``when`` is a tuple of ``(field, allowed values)`` pairs; ``label`` names the row in counts and
    error messages."""

    when: tuple[tuple[str, tuple], ...]
    pays: float
    label: str

    @property
    def suited(self) -> bool:
        """Whether the row reads the suit fields (:data:`SUIT_FIELDS`)."""
        return any(field in SUIT_FIELDS for field, _ in self.when)

    def mask(self) -> np.ndarray:
        """Boolean ``(1600,)``: the hand classes this row matches (a suited row: ``(4,)``, the suit
        classes)."""
        suited = self.suited
        match = np.ones(R.N_SUIT_CLASSES if suited else R.N_HAND_CLASSES, dtype=bool)
        values = suit_field_values() if suited else field_values()
        for field, allowed in self.when:
            match &= np.isin(values[field], [_code(field, v) for v in allowed])
        return match


@dataclasses.dataclass(frozen=True)
class Bet:
    """A bet as data: a name, a paytable (rows in order) and the source of that paytable.

    Build one from a plain dict with :func:`bet_from_dict` (which validates it) or look one up in
    :func:`pb_gym.catalog.catalog`. Unmatched hands lose the stake (-1)."""

    name: str
    rows: tuple[PayRow, ...]
    source: str = ""
    title: str = ""

    def row_masks(self) -> np.ndarray:
        """Boolean ``(n_rows, 1600)``: the hand classes each row matches (disjoint rows)."""
        return np.stack([row.mask() for row in self.rows])

    def column(self) -> np.ndarray:
        """Net win per unit staked on each hand class, ``(1600,)`` float64 (-1 where no row matches); a
        suited bet's on each suit class, ``(4,)``."""
        return _column(self)

    @property
    def suited(self) -> bool:
        """Whether the bet is settled on suits (its rows read :data:`SUIT_FIELDS`)."""
        return any(row.suited for row in self.rows)

    def suited_column(self) -> np.ndarray:
        """Net win per unit on each suited hand class (:data:`pb_gym.rules.N_SUITED_CLASSES`, row
        ``hand_class + 1600 * suit_class``): the rank-level column repeated for every suit class, or a
        suited bet's value on each suit class repeated over the hand classes."""
        if self.suited:
            return np.repeat(self.column(), R.N_HAND_CLASSES)
        return np.tile(self.column(), R.N_SUIT_CLASSES)

    @property
    def uses_pairs(self) -> bool:
        """Whether the paytable reads a pair flag (priced exactly either way)."""
        return any(
            field in ("player_pair", "banker_pair", "pairs") for row in self.rows for field, _ in row.when
        )

    def as_dict(self) -> dict:
        """The plain-dict form :func:`bet_from_dict` reads back (JSON/YAML ready)."""
        rows = []
        for row in self.rows:
            when = {field: (list(v) if len(v) > 1 else v[0]) for field, v in row.when}
            pays: object = {0.0: "push", -1.0: "lose"}.get(row.pays, row.pays)
            rows.append({"when": when, "pays": pays, "label": row.label})
        return {"name": self.name, "title": self.title, "source": self.source, "rows": rows}


@functools.lru_cache(maxsize=512)
def _column(bet: Bet) -> np.ndarray:
    column = np.full(R.N_SUIT_CLASSES if bet.suited else R.N_HAND_CLASSES, -1.0)
    for row in bet.rows:
        column[row.mask()] = row.pays
    column.setflags(write=False)
    return column


# --------------------------------------------------------------------------------------------------
# Reading a definition
# --------------------------------------------------------------------------------------------------
_NAME = re.compile(r"[a-z0-9_]+")
_DEFINITION_KEYS = ("name", "title", "source", "rows")
_ROW_KEYS = ("when", "pays", "label")
_PAYS_HELP = "a net win >= 0 per unit (e.g. 1.5 or '3:2'), 'push' (0) or 'lose' (-1)"


def _allowed_text(field: str) -> str:
    allowed = FIELDS[field]
    if allowed == tuple(range(10)):
        return "0..9"
    return ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in allowed)


def _parse_pays(value: object, where: str) -> float:
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "push":
            return 0.0
        if text in ("lose", "loss"):
            return -1.0
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?::|to)\s*(\d+(?:\.\d+)?)", text)
        if match and float(match.group(2)) > 0:
            return float(match.group(1)) / float(match.group(2))
        raise ValueError(f"{where}: pays {value!r} is not a payout; allowed: {_PAYS_HELP}")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not np.isfinite(value)
    ):
        raise ValueError(f"{where}: pays {value!r} is not a payout; allowed: {_PAYS_HELP}")
    pays = float(value)
    if pays < 0 and pays != -1.0:
        raise ValueError(f"{where}: pays {value!r} is negative but not a loss; allowed: {_PAYS_HELP}")
    return pays


def _parse_condition(field: object, value: object, where: str) -> tuple[str, tuple]:
    if field not in FIELDS:
        raise ValueError(f"{where}: unknown outcome field {field!r}; allowed: {', '.join(FIELDS)}")
    assert isinstance(field, str)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise ValueError(f"{where}: {field} has an empty list of values; allowed: {_allowed_text(field)}")
    allowed = FIELDS[field]
    for v in values:
        is_bool_field = allowed == _BOOL
        ok = (
            isinstance(v, (bool, np.bool_))
            if is_bool_field
            else not isinstance(v, (bool, np.bool_)) and v in allowed
        )
        if not ok:
            raise ValueError(f"{where}: {field}={v!r} does not exist; allowed: {_allowed_text(field)}")
    if allowed == _BOOL:
        return field, tuple(a for a in _BOOL if any(bool(v) is a for v in values))
    return field, tuple(a for a in allowed if a in values)


def _describe(index: int, suited: bool = False) -> str:
    if suited:
        return ", ".join(f"{name}={int(v[index])}" for name, v in suit_field_values().items())
    values = field_values()
    pt, bt = int(values["player_total"][index]), int(values["banker_total"][index])
    pn, bn = int(values["player_cards"][index]), int(values["banker_cards"][index])
    pp, bp = bool(values["player_pair"][index]), bool(values["banker_pair"][index])
    return (
        f"player {pt} on {pn} cards, banker {bt} on {bn} cards, player_pair={str(pp).lower()}, "
        f"banker_pair={str(bp).lower()}"
    )


def bet_from_dict(definition: Mapping) -> Bet:
    """A :class:`Bet` from a plain dict (as parsed from YAML or JSON), validated::

        {"name": "my_tie_on_7", "source": "my casino's layout",
         "rows": [{"when": {"winner": "tie", "player_total": 7}, "pays": 45}]}

    Raises ``ValueError`` naming the bet and the row for an unknown outcome field or value, a payout
    that is negative but not a loss, a row that matches no hand, or two rows that match one hand."""
    name = _definition_name(definition)
    rows_in = definition.get("rows")
    if not isinstance(rows_in, (list, tuple)) or not rows_in:
        raise ValueError(
            f"bet {name!r}: 'rows' must be a non-empty list of rows "
            "{when: {field: value, ...}, pays: ...}"
        )
    rows = [_read_row(row, f"bet {name!r}, row {number}") for number, row in enumerate(rows_in, start=1)]
    bet = Bet(
        name, tuple(rows), str(definition.get("source", "") or ""), str(definition.get("title", "") or "")
    )
    _check_rows_partition(bet)
    return bet


def _definition_name(definition: object) -> str:
    """The ``name`` of a bet definition, checked with the definition's keys."""
    if not isinstance(definition, Mapping):
        raise ValueError(
            f"a bet definition must be a mapping with keys {', '.join(_DEFINITION_KEYS)}; "
            f"got {type(definition).__name__}"
        )
    name = definition.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"a bet definition needs a 'name' of lower-case letters, digits and underscores; got {name!r}"
        )
    for key in definition:
        if key not in _DEFINITION_KEYS:
            raise ValueError(f"bet {name!r}: unknown key {key!r}; allowed: {', '.join(_DEFINITION_KEYS)}")
    return name


def _is_field_pairs(when: object) -> bool:
    return isinstance(when, (list, tuple)) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str) for pair in when
    )


def _read_row(row: object, where: str) -> PayRow:
    """One ``{when, pays, label}`` row of a bet definition (``where`` names it in errors)."""
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: a row must be a mapping with keys {', '.join(_ROW_KEYS)}")
    for key in row:
        if key not in _ROW_KEYS:
            raise ValueError(f"{where}: unknown key {key!r}; allowed: {', '.join(_ROW_KEYS)}")
    if "pays" not in row:
        raise ValueError(f"{where}: missing 'pays'; allowed: {_PAYS_HELP}")
    when = row.get("when", {})
    if _is_field_pairs(when):
        # ``dataclasses.asdict(bet)`` (what ``EnvSpec.to_json`` writes) keeps ``PayRow.when`` as
        # ``[[field, [values]], ...]``: read it as the mapping it stands for.
        when = {field: list(values) for field, values in when}
    if not isinstance(when, Mapping):
        raise ValueError(f"{where}: 'when' must be a mapping of outcome fields to values")
    conditions = tuple(_parse_condition(field, value, where) for field, value in when.items())
    label = row.get("label")
    if label is None:
        label = ", ".join(f"{f}={'/'.join(str(v).lower() for v in vs)}" for f, vs in conditions) or "any hand"
    return PayRow(conditions, _parse_pays(row["pays"], where), str(label))


def _check_rows_partition(bet: Bet) -> None:
    """Every row of ``bet`` matches some hand, and no hand matches two rows."""
    if bet.suited and not all(row.suited and all(f in SUIT_FIELDS for f, _ in row.when) for row in bet.rows):
        raise ValueError(
            f"bet {bet.name!r}: a bet on suits reads only the suit fields ({', '.join(SUIT_FIELDS)}) "
            "in every row"
        )
    masks = bet.row_masks()
    for number, mask in enumerate(masks, start=1):
        if not mask.any():
            raise ValueError(f"bet {bet.name!r}, row {number} ({bet.rows[number - 1].label}) matches no hand")
    for first in range(len(masks)):
        for second in range(first + 1, len(masks)):
            both = masks[first] & masks[second]
            if both.any():
                raise ValueError(
                    f"bet {bet.name!r}: rows {first + 1} and {second + 1} overlap (both match "
                    f"{_describe(int(np.argmax(both)), bet.suited)}); a hand may match one row only"
                )
