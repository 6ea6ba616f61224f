"""Progress of long jobs (pb_gym/progress.py): lines every few seconds off a terminal, a bar on one."""

import io
import re
import time

import pytest
import yaml

from pb_gym import progress
from pb_gym.experiments import evaluate
from pb_gym.experiments.common import scale

LINE = re.compile(
    r"^job: (\d)/2 chunks, ([\d,]+)/100 hands, \d+ s elapsed, "
    r"(about \d+ s left|done|time left not known yet)$"
)


@pytest.fixture
def fast_lines(monkeypatch):
    monkeypatch.setattr(progress, "INTERVAL_S", 0.02)


def wait_for_line(stream: io.StringIO, needle: str) -> str:
    """The first line printed that holds ``needle`` (waiting up to a minute for it: the printing
    thread may wait long for a core on a busy machine)."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        found = [line for line in stream.getvalue().splitlines() if needle in line]
        if found:
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"no line with {needle!r} in {stream.getvalue()!r}")


def test_lines_off_a_terminal_say_chunks_hands_elapsed_and_time_left(fast_lines):
    stream = io.StringIO()  # not a terminal
    chunks = scale.plan(10, 5, seed=1)  # two chunks of 5 sessions, 10 hands each
    with progress.Progress("job", total=100, chunks=2, per_item=10, stream=stream) as tracker:
        tracker.update(30)  # hands dealt inside the first chunk
        first = wait_for_line(stream, " 30/100 hands")
        tracker(chunks[0])  # the chunk ends: its 20 hands not yet counted are added
        assert (tracker.done, tracker.chunks_done) == (50, 1)
        second = wait_for_line(stream, " 50/100 hands")
        tracker(chunks[1])  # a chunk that ran elsewhere reports all its hands at once
    lines = stream.getvalue().splitlines()
    assert LINE.match(first).groups()[0] == "0" and "about" in first
    assert LINE.match(second).groups()[0] == "1" and "about" in second
    assert LINE.match(lines[-1]).groups() == ("2", "100", "done")
    assert all(LINE.match(line) for line in lines)


def test_chunks_counted_side_by_side_on_threads_add_up_exactly(fast_lines):
    """Two chunks counting their hands at once from two threads (the threads backend): no count is
    lost, and a finished chunk adds only its own hands not yet counted."""
    import threading

    chunks = scale.plan(2000, 1000, seed=1)  # two chunks of 1,000 sessions, 10 hands each
    tracker = progress.Progress("job", total=20_000, chunks=2, per_item=10, stream=io.StringIO())

    def deal(chunk, hands):
        for _ in range(hands):
            tracker.update(chunk.size, chunk.index)

    workers = [threading.Thread(target=deal, args=(chunk, 7)) for chunk in chunks]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert tracker.done == 14_000
    tracker(chunks[1])  # its last 3 hands of 1,000 sessions, not yet counted
    assert (tracker.done, tracker.chunks_done) == (17_000, 1)
    tracker(chunks[0])
    assert (tracker.done, tracker.chunks_done, tracker.enabled) == (20_000, 2, False)


def test_a_chunk_counter_stops_by_itself_after_the_last_chunk(fast_lines):
    stream = io.StringIO()
    chunks = scale.plan(4, 2, seed=1)
    printer = scale.progress_printer("counting", True, len(chunks))
    printer.stream = stream
    for chunk in chunks:
        printer(chunk)
    assert not printer.enabled  # closed: no thread left printing
    assert printer._thread is not None and not printer._thread.is_alive()
    assert re.fullmatch(r"counting: 2/2 chunks, \d+ s elapsed, done", printer.line())


def test_a_short_job_off_a_terminal_prints_nothing_and_a_disabled_one_never(fast_lines):
    stream = io.StringIO()
    with progress.Progress("job", total=10, stream=stream, enabled=False) as tracker:
        tracker.update(10)
        time.sleep(0.1)
    assert stream.getvalue() == ""
    progress.INTERVAL_S = 60.0  # restored by monkeypatch
    with progress.Progress("job", total=10, stream=stream) as tracker:
        tracker.update(10)
    assert stream.getvalue() == ""  # done before the first line was due


def test_a_terminal_gets_a_tqdm_bar_and_no_lines(fast_lines):
    stream = io.StringIO()
    with progress.Progress("job", total=100, chunks=2, stream=stream, bar=True) as tracker:
        tracker.update(100)
        time.sleep(0.1)
    text = stream.getvalue()
    assert "job" in text and "100/100" in text and "\r" in text  # tqdm redraws one line
    assert "elapsed" not in text


@pytest.fixture
def line_at_start(monkeypatch, fast_lines):
    """The line printer writes one line as soon as it starts, so a job that ends within one interval
    (a 1,200-hand study on a fast machine: CI once finished it inside 20 ms) still shows its lines."""

    def print_lines(self):
        self._write()
        while not self._stop.wait(progress.INTERVAL_S):
            self._write()

    monkeypatch.setattr(progress.Progress, "_print_lines", print_lines)


def test_evaluate_off_a_terminal_prints_progress_lines(tmp_path, capsys, line_at_start):
    config = {
        "name": "tiny",
        "sessions": 40,
        "hands": 30,
        "chunk_sessions": 20,
        "seed": 1,
        "systems": [{"type": "flat"}, {"type": "kelly", "bets": ["banker", "tie"]}],
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    evaluate.main(str(path))
    err = capsys.readouterr().err.splitlines()
    assert err, "no progress line"
    assert re.fullmatch(r"tiny: 2/2 chunks, 1,200/1,200 hands, \d+ s elapsed, done", err[-1])
    assert all(re.match(r"tiny: \d/2 chunks, [\d,]+/1,200 hands, \d+ s elapsed, ", line) for line in err)
