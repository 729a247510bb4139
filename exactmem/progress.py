"""Progress of long runs on stderr: a tqdm bar on a terminal, plain lines otherwise, nothing
when quiet (``docs/cli.md`` § Progress).

One object, :class:`Progress`, counts items (instances, sweep points) towards a total and
names the current *stage* (build, forward, write, check):

* **bar** (stderr is a TTY): a tqdm bar with count, rate and ETA; the stage and its running
  time in the bar's postfix, refreshed once a second by a small background thread (so a
  five-minute forward pass does not look frozen); result lines are written above the bar;
* **plain** (stderr is a file or a pipe): whole lines only, never a carriage return — each
  stage line, each result line as ``[####....] k/n message (elapsed …, ETA …)``, and when
  items finish without a message a count line at most every ``interval`` seconds;
* **quiet**: nothing at all.

The mode is decided once, from ``quiet`` and ``file.isatty()``; ``mode=`` forces one (tests,
or a caller that knows better). Progress never writes to stdout. The certificate kernel
(``exactmem/certificate/``) does not import this module: it stays standard-library only.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional, TextIO

__all__ = ["Progress", "MODES", "PLAIN_INTERVAL", "choose_mode"]

MODES = ("bar", "plain", "quiet")
PLAIN_INTERVAL = 10.0  # seconds between count lines in plain mode (result and stage lines are always shown)
TICK = 1.0  # seconds between bar refreshes while a stage runs


def choose_mode(quiet: bool = False, file: Optional[TextIO] = None, mode: Optional[str] = None) -> str:
    """``quiet`` → ``"quiet"``; else ``mode`` if given; else ``"bar"`` on a TTY, ``"plain"`` otherwise."""
    if quiet:
        return "quiet"
    if mode is not None:
        if mode not in MODES:
            raise ValueError(f"unknown progress mode {mode!r}; use one of {', '.join(MODES)}")
        return mode
    try:
        return "bar" if (file or sys.stderr).isatty() else "plain"
    except (AttributeError, ValueError):  # closed or unusual streams
        return "plain"


def _columns(file: TextIO) -> Optional[int]:
    try:
        return os.get_terminal_size(file.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None


def _seconds(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def _ascii_bar(k: int, n: int, width: int = 20) -> str:
    f = int(width * k / n) if n else width
    return "[" + "#" * f + "." * (width - f) + "]"


class Progress:
    """Count ``total`` items (``unit``) under ``desc``; see the module docstring for the modes.

    ``update(n, message)`` marks n items done (``message``: a result line, always shown);
    ``stage(label, line)`` names what runs now (plain mode prints ``line``); ``note(text)``
    prints one line in bar and plain mode; ``suspended()`` clears the bar while other code
    writes to the terminal; ``close()`` (or ``with``) ends it."""

    def __init__(self, total: Optional[int] = None, desc: str = "", unit: str = "it", *, quiet: bool = False,
                 file: Optional[TextIO] = None, mode: Optional[str] = None, interval: float = PLAIN_INTERVAL):
        self.file = file or sys.stderr
        self.mode = choose_mode(quiet, self.file, mode)
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.done = 0
        self.start = self._last_line = time.perf_counter()
        self._last_status = self.start - interval  # the first status line is printed at once
        self._stage: Optional[str] = None
        self._stage_start = self.start
        self._lock = threading.RLock()
        self._bar = None
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None
        if self.mode == "bar":
            from tqdm import tqdm

            unsized = _columns(self.file) == 0  # a terminal of size 0 x 0 (a fresh pty): tqdm would hide the bar
            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.file, leave=True, mininterval=0.2,
                             bar_format="{l_bar}{bar:16}{r_bar}",
                             dynamic_ncols=not unsized, ncols=100 if unsized else None, nrows=24 if unsized else None)
            self._ticker = threading.Thread(target=self._tick, name="exactmem-progress", daemon=True)
            self._ticker.start()

    # -------------------------------------------------------------------- reporting

    def stage(self, label: str, line: Optional[str] = None) -> None:
        """A new stage starts: ``label`` in the bar's postfix with its running time; in plain
        mode ``line`` (if given) is printed as one line."""
        with self._lock:
            self._stage, self._stage_start = label, time.perf_counter()
            if self.mode == "plain" and line:
                self._line(line)
            elif self._bar is not None:
                self._postfix()

    def status(self, text: str) -> None:
        """A running status that changes often (e.g. the per-worker progress of a Dask check): the
        bar's postfix, keeping the stage's clock; in plain mode a line at most every ``interval``
        seconds."""
        with self._lock:
            if self._bar is not None:
                self._stage = text
                self._postfix()
            elif self.mode == "plain" and time.perf_counter() - self._last_status >= self.interval:
                self._last_status = time.perf_counter()
                self._line(text)

    def describe(self, desc: str) -> None:
        """Change the bar's description (e.g. the current instance); plain mode: nothing."""
        with self._lock:
            self.desc = desc
            if self._bar is not None:
                self._bar.set_description_str(desc, refresh=True)

    def update(self, n: int = 1, message: Optional[str] = None) -> None:
        """``n`` more items done. ``message``: a result line (bar: written above the bar;
        plain: ``[####....] k/n message (elapsed, ETA)``); without one, plain mode prints a count
        line at most every ``interval`` seconds and when the total is reached."""
        with self._lock:
            self.done += n
            if self.mode == "quiet":
                return
            if self._bar is not None:
                if message:
                    self._bar.write(message, file=self.file)
                self._bar.update(n)
                return
            now = time.perf_counter()
            finished = self.total is not None and self.done >= self.total
            if message or finished or now - self._last_line >= self.interval:
                self._line(self._counter() + (f" {message}" if message else f" {self.unit}") + self._timing(now))

    def note(self, text: str) -> None:
        """One line, in bar mode above the bar; nothing when quiet."""
        with self._lock:
            if self._bar is not None:
                self._bar.write(text, file=self.file)
            elif self.mode == "plain":
                self._line(text)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Clear the bar while the body writes to the terminal, then draw it again."""
        if self._bar is None:
            yield
            return
        with self._lock:
            self._bar.clear()
            try:
                yield
            finally:
                self._bar.refresh()

    def close(self) -> None:
        """Stop the refresh thread and leave the bar's last state on screen."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self._bar is not None:
                self._stage = None
                self._postfix()
                self._bar.close()
                self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -------------------------------------------------------------------- internals

    def _line(self, text: str) -> None:
        self._last_line = time.perf_counter()
        print(text, file=self.file, flush=True)

    def _counter(self) -> str:
        if self.total is None:
            return f"{self.done}"
        return f"{_ascii_bar(self.done, self.total)} {self.done}/{self.total}"

    def _timing(self, now: float) -> str:
        el = now - self.start
        out = f" (elapsed {_seconds(el)}"
        if self.done and el > 0:
            rate = self.done / el
            out += f", {rate:.3g} {self.unit}/s" if rate >= 1 else f", {el / self.done:.3g} s/{self.unit}"
            if self.total is not None and self.done < self.total:
                out += f", ETA {_seconds(el / self.done * (self.total - self.done))}"
        return out + ")"

    def _postfix(self) -> None:
        if self._bar is None:
            return
        text = "" if self._stage is None else f"{self._stage} {_seconds(time.perf_counter() - self._stage_start)}"
        self._bar.set_postfix_str(text, refresh=True)

    def _tick(self) -> None:
        while not self._stop.wait(TICK):
            with self._lock:
                if self._stage is not None:
                    self._postfix()
