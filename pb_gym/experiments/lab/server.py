"""``pb-gym lab``: the lab's page served on this machine only, until Ctrl-C.

The server is Werkzeug's (Flask's own), threaded, bound to 127.0.0.1: nothing outside this machine
can reach it, and the page loads nothing from the internet (Dash serves its scripts itself). Before
it listens, every lesson computes its default once (:func:`warm`), so that the first run on a machine
compiles the kernels it needs before the class sees the page, not during the first slider move. The
lab writes no file; the numba kernel cache is pb-gym's, as for every command
(:mod:`pb_gym.kernel_cache`).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable

HOST = "127.0.0.1"
"""The only address the lab listens on."""
DEFAULT_PORT = 8050
"""The port of ``pb-gym lab`` without ``--port``."""


class PortError(ValueError):
    """The port cannot be listened on (in use, or not allowed); the message names ``--port``."""


def warm() -> None:
    """Compute every lesson's default settings once (the compiled kernels load or compile now)."""
    from pb_gym.experiments.lab import bold, gamblers_ruin, hand, layout, progression, shoe
    from pb_gym.experiments.lab.common import DEFAULT_SEED

    d = layout.DEFAULTS
    hand.bet_odds(8, d["hand-side"])
    hand.deal_hands(8, 1000, DEFAULT_SEED)
    start, target = d["ruin-range"]
    gamblers_ruin.ruin_exact(d["ruin-bet"], start, target, d["ruin-stake"])
    gamblers_ruin.ruin_sessions(
        d["ruin-bet"], start, target, d["ruin-stake"], d["ruin-sessions"], DEFAULT_SEED
    )
    keys = ("system", "bankroll", "goal", "max", "hands")
    system, bankroll, goal, table_max, hands = (d[f"prog-{key}"] for key in keys)
    progression.progression_exact(system, bankroll, goal, table_max, hands)
    progression.progression_sessions(
        system, bankroll, goal, table_max, hands, d["prog-sessions"], DEFAULT_SEED
    )
    keys = ("bankroll", "goal", "hands", "max", "bet")
    bankroll, goal, hands, table_max, bet = (d[f"bold-{key}"] for key in keys)
    bold.bold_exact(bankroll, goal, hands, table_max, bet)
    bold.bold_sessions(bankroll, goal, hands, table_max, bet, d["bold-sessions"], DEFAULT_SEED)
    dealt = shoe.deal_shoe(8, DEFAULT_SEED)
    shoe.next_hand_odds(dealt["composition"])
    shoe.counting_summary(8, DEFAULT_SEED, d["count-bet"])


def check_port(port: int) -> None:
    """Raise :class:`PortError` unless ``port`` is 0 (any free port) or 1024 to 65535."""
    if isinstance(port, bool) or not isinstance(port, int) or not (port == 0 or 1024 <= port <= 65535):
        raise PortError(
            f"--port {port!r} is not allowed; allowed: an integer from 1024 to 65535 (0: any free port)"
        )


def listen(port: int) -> socket.socket:
    """A socket listening on ``127.0.0.1:port`` (0: a free port), for the server to take over; the
    server's own bind would print its error and exit, this one raises :class:`PortError`."""
    check_port(port)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        raise PortError(
            f"--port {port}: cannot listen on {HOST}:{port} ({error.strerror or error}); allowed: a free "
            "port from 1024 to 65535 (0: any free port)"
        ) from None
    return sock


def serve(
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    ready: Callable[[str, Callable[[], None]], None] | None = None,
) -> dict:
    """Serve the lab on ``http://127.0.0.1:PORT/`` until Ctrl-C (or ``stop``).

    Args:
        port: the port, 1024 to 65535, or 0 for any free one.
        open_browser: open the page in the default browser once the server listens.
        ready: called once the server listens with its address and a ``stop`` function (tests and
            embedding); the address is also printed on stdout.

    Returns:
        ``{"url": ..., "seconds": ...}`` once ``stop`` was called.

    Raises:
        PortError: the port is not allowed or cannot be listened on (in use).
        KeyboardInterrupt: Ctrl-C stopped the server (the server is closed first).
    """
    check_port(port)
    from werkzeug.serving import make_server

    from pb_gym.experiments.lab.app import create_app

    listening = listen(port)  # (a port in use is refused before the lessons are prepared)
    print("pb-gym lab: preparing the lessons...", file=sys.stderr, flush=True)
    try:
        app = create_app()
        warm()
    except BaseException:
        listening.close()
        raise
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # (no line per request)
    server = make_server(HOST, port, app.server, threaded=True, fd=listening.fileno())
    listening.close()  # (the server holds its own copy of the socket)
    # a request cut short (a page closed, the server stopping under it) is the browser's business: no
    # traceback on the terminal (the app's own errors are Flask's to log)
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    url = f"http://{HOST}:{server.port}/"
    stopped = threading.Event()

    def stop() -> None:
        stopped.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    print(f"pb-gym lab: serving {url} (Ctrl-C stops it)", flush=True)
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    if ready is not None:
        ready(url, stop)
    started = time.perf_counter()
    server.serve_forever()  # (Werkzeug's: it returns on Ctrl-C, the server closed)
    if not stopped.is_set():
        logging.getLogger("werkzeug").disabled = True  # (the requests still running end in silence)
        raise KeyboardInterrupt
    return {"url": url, "seconds": time.perf_counter() - started}


__all__ = ["HOST", "DEFAULT_PORT", "PortError", "warm", "check_port", "listen", "serve"]
