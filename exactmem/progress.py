"""Progress of long runs on stderr: a tqdm bar on a terminal, plain lines otherwise, nothing when quiet.

See ``docs/cli.md`` § Progress.

One object, `Progress`, counts items (instances, sweep points, examples) towards a total,
names the item being worked on (`Progress.describe`) and its current *stage* (build,
forward, write, check), and reports progress inside a stage (`Progress.within`: layers or
examples done). Every line has one format::

    [k/n] <item>: <stage>, or [k/n] <result>; elapsed …, ETA …

where ``k`` is the item the line is about. The ETA is weighted: each item may carry an expected
cost (``costs=``, e.g. examples × depth for a certify instance); the time spent so far per unit
of cost, times the cost still to do, is the estimate — so one big instance after twenty small
ones does not get the small ones' ETA. Durations have one format (`duration`).

* **bar** (stderr is a TTY): a tqdm bar whose fill is the share of the cost done, then
  ``k/n``, elapsed and ETA, the item and its stage with the stage's running time (refreshed
  once a second by a small background thread, so a five-minute forward pass does not look
  frozen); result lines are written above the bar;
* **plain** (stderr is a file or a pipe): whole lines only, never a carriage return — each
  stage line, each result line, progress inside a stage and bare count lines at most every
  ``interval`` seconds;
* **quiet**: nothing at all.

The mode is decided once, from ``quiet`` and ``file.isatty()``; ``mode=`` forces one (tests,
or a caller that knows better). Progress never writes to stdout. The certificate kernel
(``exactmem/kernel/``) does not import this module: it stays standard-library only.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence, TextIO

__all__ = ["Progress", "MODES", "PLAIN_INTERVAL", "choose_mode", "duration"]

MODES = ("bar", "plain", "quiet")
PLAIN_INTERVAL = 10.0  # seconds between count / in-stage lines in plain mode (result and stage lines always show)
TICK = 1.0  # seconds between bar refreshes while a stage runs
WITHIN_EVERY = 0.5  # seconds between updates of the in-stage count in the bar


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


def duration(seconds: float) -> str:
    """The one duration format of progress lines and summaries: ``0.4 s``, ``12 s``,
    ``3 min 05 s``, ``2 h 07 min``."""
    if seconds < 9.95:
        return f"{max(seconds, 0.0):.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def _columns(file: TextIO) -> Optional[int]:
    try:
        return os.get_terminal_size(file.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None


class Progress:
    """Count ``total`` items (``unit``) under ``desc``; see the module docstring for the modes.

    ``costs``: the expected cost of each item, in order (any positive unit); the ETA and the
    bar's fill are weighted by it. ``describe(name)`` names the item being worked on;
    ``stage(label, line)`` names what runs now (plain mode prints ``line``); ``within(done,
    total, what)`` reports progress inside the stage; ``update(n, message)`` marks n items done
    (``message``: a result line, always shown); ``note(text)`` prints one line;
    ``suspended()`` clears the bar while other code writes to the terminal; ``close()`` (or
    ``with``) ends it."""

    def __init__(self, total: Optional[int] = None, desc: str = "", unit: str = "it", *, quiet: bool = False,
                 file: Optional[TextIO] = None, mode: Optional[str] = None, interval: float = PLAIN_INTERVAL,
                 costs: Optional[Sequence[float]] = None):
        self.file = file or sys.stderr
        self.mode = choose_mode(quiet, self.file, mode)
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        if costs is not None and (total is None or len(costs) != total or any(c <= 0 for c in costs)):
            raise ValueError("costs needs one positive cost per item")
        self.costs = list(costs) if costs is not None else None
        self.done = 0
        self._done_cost = 0.0
        self.item = ""
        self.start = self._last_line = time.perf_counter()
        self._last_status = self._last_within = self.start - interval  # the first status line is printed at once
        self._stage: Optional[str] = None
        self._stage_start = self.start
        self._within: Optional[str] = None
        self._lock = threading.RLock()
        self._bar = None
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None
        if self.mode == "bar":
            from tqdm import tqdm

            unsized = _columns(self.file) == 0  # a terminal of size 0 x 0 (a fresh pty): tqdm would hide the bar
            self._bar = tqdm(total=self._cost(total) if total is not None else None, desc=desc, file=self.file,
                             leave=True, mininterval=0.2, bar_format="{desc} {bar:16} {postfix}",
                             dynamic_ncols=not unsized, ncols=100 if unsized else None, nrows=24 if unsized else None)
            self._postfix()
            self._ticker = threading.Thread(target=self._tick, name="exactmem-progress", daemon=True)
            self._ticker.start()

    # -------------------------------------------------------------------- reporting

    def describe(self, item: str) -> None:
        """The item being worked on now (its name in every line about it)."""
        with self._lock:
            self.item = item
            self._postfix()

    def stage(self, label: str, line: Optional[str] = None) -> None:
        """A new stage starts: ``label`` in the bar with its running time; in plain mode ``line``
        (if given) is printed as ``[k/n] item: line``."""
        with self._lock:
            self._stage, self._stage_start, self._within = label, time.perf_counter(), None
            if self.mode == "plain" and line:
                self._line(self._about(line))
            self._postfix()

    def within(self, done: int, total: int, what: str) -> None:
        """Progress inside the running stage: ``done`` of ``total`` ``what`` (e.g. layers,
        examples). The bar shows it at most every half second; plain mode prints a line at most
        every ``interval`` seconds once the stage has run that long."""
        now = time.perf_counter()
        if self.mode == "quiet":
            return
        if self.mode == "plain":  # a line only for a long stage, at most every interval
            if now - self._stage_start < self.interval or now - self._last_within < self.interval:
                return
        elif now - self._last_within < WITHIN_EVERY and done < total:
            return
        with self._lock:
            self._last_within = now
            self._within = f"{what} {done:,}/{total:,}"
            if self.mode == "plain":
                self._line(self._about(f"{self._stage or 'working'}: {self._within} "
                                       f"({duration(now - self._stage_start)})"))
            self._postfix()

    def status(self, text: str) -> None:
        """A running status that changes often (e.g. the per-worker progress of a Dask check): in
        the bar; in plain mode a line at most every ``interval`` seconds."""
        with self._lock:
            if self._bar is not None:
                self._within = text
                self._postfix()
            elif self.mode == "plain" and time.perf_counter() - self._last_status >= self.interval:
                self._last_status = time.perf_counter()
                self._line(self._about(text))

    def update(self, n: int = 1, message: Optional[str] = None, cost: Optional[float] = None) -> None:
        """``n`` more items done. ``message``: a result line ``[k/n] message (elapsed, ETA)``
        (bar: written above the bar); without one, plain mode prints a count line at most every
        ``interval`` seconds and when the total is reached. ``cost``: the cost of the items just
        done when they finish out of order (Dask); by default the next ``n`` of ``costs``."""
        with self._lock:
            k = self.done + n
            before = self._done_cost
            self._done_cost += cost if cost is not None else self._cost(k) - self._cost(self.done)
            self.done = k
            self._stage = self._within = None
            if self.mode == "quiet":
                return
            now = time.perf_counter()
            if self._bar is not None:
                if message:
                    self._bar.write(f"{self._counter(k)} {message}", file=self.file)
                self._bar.update(self._done_cost - before)
                self._postfix()
                return
            finished = self.total is not None and self.done >= self.total
            if message or finished or now - self._last_line >= self.interval:
                self._line(f"{self._counter(k)} {message or self.unit + ('' if k == 1 else 's') + ' done'}; "
                           f"{self._timing(now)}")

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

    def eta(self, now: Optional[float] = None) -> Optional[float]:
        """Seconds still to go, weighted by the items' costs; None before the first item is done
        or without a total."""
        if self.total is None or not self.done or self.done >= self.total:
            return None
        el = (now or time.perf_counter()) - self.start
        if self._done_cost <= 0:
            return None
        return el / self._done_cost * max(self._cost(self.total) - self._done_cost, 0.0)

    def close(self) -> None:
        """Stop the refresh thread and leave the bar's last state on screen."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self._bar is not None:
                self._stage = self._within = None
                self.item = ""
                self._postfix()
                self._bar.close()
                self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -------------------------------------------------------------------- internals

    def _cost(self, k: int) -> float:
        """The cost of the first ``k`` items (``k`` itself without costs)."""
        return float(k) if self.costs is None else float(sum(self.costs[:k]))

    def _counter(self, k: int) -> str:
        return f"[{k}]" if self.total is None else f"[{k}/{self.total}]"

    def _about(self, text: str) -> str:
        """``[k/n] item: text`` for the item being worked on (k = items done + 1)."""
        k = self.done + 1 if self.total is None or self.done < self.total else self.done
        return f"{self._counter(k)} {self.item + ': ' if self.item else ''}{text}"

    def _line(self, text: str) -> None:
        self._last_line = time.perf_counter()
        print(text, file=self.file, flush=True)

    def _timing(self, now: float) -> str:
        out = f"elapsed {duration(now - self.start)}"
        eta = self.eta(now)
        return out + (f", ETA {duration(eta)}" if eta is not None else "")

    def _postfix(self) -> None:
        if self._bar is None:
            return
        now = time.perf_counter()
        k = self.done if self.total is None or self.done >= self.total else self.done + 1
        head = f"{self.done}/{self.total} {self.unit}s" if self.total is not None else f"{self.done} {self.unit}s"
        parts = [head, self._timing(now)]
        what = f"[{k}] {self.item}" if self.item and self.total is not None else self.item
        if self._stage is not None:
            what += f"{': ' if what else ''}{self._stage} {duration(now - self._stage_start)}"
        if self._within:
            what += f"{', ' if what else ''}{self._within}"
        if what and (self.total is None or self.done < self.total):
            parts.append(what)
        self._bar.set_description_str(self.desc, refresh=False)
        self._bar.set_postfix_str(" · ".join(parts), refresh=True)

    def _tick(self) -> None:
        while not self._stop.wait(TICK):
            with self._lock:
                if self._bar is not None:
                    self._postfix()
