"""The published side bets of the bet catalog (:mod:`pb_gym.catalog`), as plain data: each bet the
dict :func:`pb_gym.catalog.bet_from_dict` reads, with the source of its paytable. A new published bet
is one entry of :data:`SIDE_BET_DEFINITIONS`."""

from __future__ import annotations

WOO_SIDE_BETS = "Wizard of Odds, Baccarat Side Bets (wizardofodds.com/games/baccarat/side-bets/)"
WOO_EGALITE = "Wizard of Odds, Egalite Bets in Baccarat (wizardofodds.com/games/baccarat/side-bets/egalite/)"
WOO_TOTALS = (
    "Wizard of Odds, Side Total Side Bets in Baccarat "
    "(wizardofodds.com/games/baccarat/side-bets/side-totals/)"
)
WOO_LUCKY6 = "Wizard of Odds, Lucky 6 (wizardofodds.com/games/baccarat/side-bets/lucky-6/)"
WOO_3CARD = "Wizard of Odds, 3-Card Win (wizardofodds.com/games/baccarat/side-bets/3-card-win/)"
WOO_3GIVING8 = "Wizard of Odds, 3 Giving 8 (wizardofodds.com/games/baccarat/side-bets/3-giving-8/)"
WOO_BAD_BEAT = (
    "Wizard of Odds, Bad Beat Baccarat (wizardofodds.com/games/baccarat/side-bets/bad-beat-baccarat/)"
)
AAP_SIDE_BETS = (
    "Eliot Jacobson, Advanced Advantage Play, Baccarat Side Bets "
    "(advancedadvantageplay.com/side-bets/baccarat-side-bets/)"
)
LIVE_BIG_SMALL = (
    "live-dealer Big/Small paytable (e.g. the Evolution/Ezugi-style rules page at "
    "baccarat-vip.gamicorp.com: Big 0.54:1, Small 1.5:1)"
)
LIVE_EITHER_PAIR = "live-dealer paytable (e.g. baccarat-vip.gamicorp.com: Either Pair 5:1)"
SUPER6 = "Super 6 / Punto 2000 no-commission tables (12:1 on a banker win with 6; e.g. leovegas.com)"
TIGER = (
    "the EZ Baccarat 'Tiger' bets as commonly printed (Tiger 12:1 / 20:1, Small Tiger 22:1, "
    "Big Tiger 50:1, Tiger Tie 35:1); Big Tiger's 15.253% edge: " + AAP_SIDE_BETS
)

_EGALITE_PAYS = (150, 215, 225, 200, 120, 110, 45, 45, 80, 80)
_PLAYER_TOTAL_PAYS = (8, 10.5, 10.5, 10.5, 9.5, 9.5, 5.5, 5.5, 5.5, 5.5)
_BANKER_TOTAL_PAYS = (8, 10.5, 10.5, 10.5, 7.5, 7.5, 5.5, 5.5, 5.5, 5.5)


def _dragon_bonus(side: str) -> dict:
    rows: list[dict] = [
        {"when": {"winner": side, f"{side}_natural": True}, "pays": 1, "label": "natural win"},
        {"when": {"winner": "tie", "natural": True}, "pays": "push", "label": "natural tie"},
    ]
    for margin, pays in ((9, 30), (8, 10), (7, 6), (6, 4), (5, 2), (4, 1)):
        rows.append(
            {
                "when": {"winner": side, f"{side}_natural": False, "margin": margin},
                "pays": pays,
                "label": f"win by {margin}",
            }
        )
    return {
        "name": f"dragon_bonus_{side}",
        "title": f"Dragon Bonus ({side})",
        "source": WOO_SIDE_BETS,
        "rows": rows,
    }


SIDE_BET_DEFINITIONS: tuple[dict, ...] = (
    _dragon_bonus("player"),
    _dragon_bonus("banker"),
    *(
        {
            "name": f"egalite_{total}",
            "title": f"Egalite {total} (tie on {total})",
            "source": WOO_EGALITE,
            "rows": [
                {"when": {"winner": "tie", "player_total": total}, "pays": pays, "label": f"tie on {total}"}
            ],
        }
        for total, pays in enumerate(_EGALITE_PAYS)
    ),
    {
        "name": "four_cards",
        "title": "4-5-6: four cards",
        "source": WOO_SIDE_BETS,
        "rows": [{"when": {"total_cards": 4}, "pays": "3:2"}],
    },
    {
        "name": "five_cards",
        "title": "4-5-6: five cards",
        "source": WOO_SIDE_BETS,
        "rows": [{"when": {"total_cards": 5}, "pays": 2}],
    },
    {
        "name": "six_cards",
        "title": "4-5-6: six cards",
        "source": WOO_SIDE_BETS,
        "rows": [{"when": {"total_cards": 6}, "pays": 2}],
    },
    {
        "name": "small",
        "title": "Small (four cards)",
        "source": LIVE_BIG_SMALL,
        "rows": [{"when": {"total_cards": 4}, "pays": 1.5}],
    },
    {
        "name": "big",
        "title": "Big (five or six cards)",
        "source": LIVE_BIG_SMALL,
        "rows": [{"when": {"total_cards": [5, 6]}, "pays": 0.54}],
    },
    {
        "name": "lucky6",
        "title": "Lucky 6 (liberal)",
        "source": WOO_LUCKY6,
        "rows": [
            {"when": {"winner": "banker", "banker_total": 6, "banker_cards": 2}, "pays": 12},
            {"when": {"winner": "banker", "banker_total": 6, "banker_cards": 3}, "pays": 23},
        ],
    },
    {
        "name": "tiger",
        "title": "Tiger / Lucky 6 (stingy)",
        "source": WOO_LUCKY6 + "; " + TIGER,
        "rows": [
            {"when": {"winner": "banker", "banker_total": 6, "banker_cards": 2}, "pays": 12},
            {"when": {"winner": "banker", "banker_total": 6, "banker_cards": 3}, "pays": 20},
        ],
    },
    {
        "name": "small_tiger",
        "title": "Small Tiger",
        "source": TIGER,
        "rows": [{"when": {"winner": "banker", "banker_total": 6, "banker_cards": 2}, "pays": 22}],
    },
    {
        "name": "big_tiger",
        "title": "Big Tiger",
        "source": TIGER,
        "rows": [{"when": {"winner": "banker", "banker_total": 6, "banker_cards": 3}, "pays": 50}],
    },
    {
        "name": "tiger_tie",
        "title": "Tiger Tie (tie on 6)",
        "source": TIGER,
        "rows": [{"when": {"winner": "tie", "player_total": 6}, "pays": 35}],
    },
    {
        "name": "super6",
        "title": "Super 6",
        "source": SUPER6,
        "rows": [{"when": {"winner": "banker", "banker_total": 6}, "pays": 12}],
    },
    {
        "name": "either_pair",
        "title": "Either Pair",
        "source": LIVE_EITHER_PAIR,
        "rows": [{"when": {"pairs": [1, 2]}, "pays": 5}],
    },
    *(
        {
            "name": f"player_total_{total}",
            "title": f"Player total {total}",
            "source": WOO_TOTALS,
            "rows": [{"when": {"player_total": total}, "pays": pays}],
        }
        for total, pays in enumerate(_PLAYER_TOTAL_PAYS)
    ),
    *(
        {
            "name": f"banker_total_{total}",
            "title": f"Banker total {total}",
            "source": WOO_TOTALS,
            "rows": [{"when": {"banker_total": total}, "pays": pays}],
        }
        for total, pays in enumerate(_BANKER_TOTAL_PAYS)
    ),
    # The banker stands on a two-card 3 only when the player's third card is an 8: so "banker 3 on two
    # cards, player on three" is exactly "banker starts with 3 and the player draws an 8".
    {
        "name": "three_giving_eight",
        "title": "3 Giving 8",
        "source": WOO_3GIVING8,
        "rows": [{"when": {"banker_total": 3, "banker_cards": 2, "player_cards": 3}, "pays": 200}],
    },
    {
        "name": "eights_and_nines",
        "title": "88/89/98/99",
        "source": AAP_SIDE_BETS,
        "rows": [{"when": {"player_total": [8, 9], "banker_total": [8, 9]}, "pays": 20}],
    },
    {
        "name": "nine_over_seven",
        "title": "9 over 7",
        "source": AAP_SIDE_BETS,
        "rows": [
            {
                "when": {"player_natural": True, "player_total": 9, "banker_total": 7},
                "pays": 50,
                "label": "player natural 9, banker 7",
            },
            {
                "when": {"banker_natural": True, "banker_total": 9, "player_total": 7},
                "pays": 50,
                "label": "banker natural 9, player 7",
            },
        ],
    },
    {
        "name": "bad_beat",
        "title": "Bad Beat (natural 9 beats natural 8)",
        "source": AAP_SIDE_BETS + "; " + WOO_BAD_BEAT,
        "rows": [
            {
                "when": {"player_natural": True, "banker_natural": True, "winner_total": 9, "margin": 1},
                "pays": 50,
            }
        ],
    },
    {
        "name": "any_bad_beat",
        "title": "Any Bad Beat (win by one point)",
        "source": WOO_BAD_BEAT,
        "rows": [
            {
                "when": {"winner_total": 9, "winner_cards": 3, "loser_cards": 3, "margin": 1},
                "pays": 40,
                "label": "three-card 9 beats three-card 8",
            },
            {
                "when": {"winner_total": 9, "natural": True, "margin": 1},
                "pays": 10,
                "label": "natural 9 beats natural 8",
            },
            {"when": {"winner_total": 8, "margin": 1}, "pays": 6, "label": "8 beats 7"},
            {"when": {"winner_total": 7, "margin": 1}, "pays": 4, "label": "7 beats 6"},
            {
                "when": {"winner_total": [1, 2, 3, 4, 5, 6], "margin": 1},
                "pays": 1,
                "label": "other win by one",
            },
        ],
    },
    {
        "name": "player_three_card_win",
        "title": "Player 3-Card Win",
        "source": WOO_3CARD,
        "rows": [{"when": {"winner": "player", "player_cards": 3}, "pays": 4}],
    },
    {
        "name": "banker_three_card_win",
        "title": "Banker 3-Card Win",
        "source": WOO_3CARD,
        "rows": [{"when": {"winner": "banker", "banker_cards": 3}, "pays": 5}],
    },
)
"""The published side bets of the catalog, as the plain dicts :func:`bet_from_dict` reads."""
