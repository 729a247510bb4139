"""Progress of long runs on stderr: a tqdm bar on a terminal, plain lines otherwise, nothing when quiet.

See ``docs/cli.md`` § Progress.

One object, `Progress`, counts items (instances, sweep points, examples) towards a total,
names the item being worked on (`Progress.describe`) and its current *stage* (build,
forward, write, check), and reports progress inside a stage (`Progress.within`: layers or
examples done). Every line has one format::

    [k/n] <item>: <stage>, or [k/n] <result>; elapsed …, ETA …

where ``k`` is the item the line is about. The ETA comes from a cost model calibrated as items
finish: each item may carry an expected cost (``costs=``, e.g. examples × depth for a certify
instance); each finished item is a sample (its cost, the seconds since the previous one
finished), and the least-squares fit seconds = a + b·cost (a, b ≥ 0: a fixed overhead per item
plus a share proportional to its cost) predicts the items still to do — so one big instance
after twenty small ones does not get the small ones' ETA, and a first instance that paid for
the imports does not make the rest look like hours. Until `MIN_CALIBRATION` items have finished,
or while the samples contradict the model (bigger items faster), the line says ``ETA unknown``:
never a number the data cannot support. Durations have one format (`duration`).

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
from typing import Callable, Iterator, List, Optional, Sequence, TextIO, Tuple

__all__ = ["Progress", "MODES", "MIN_CALIBRATION", "PLAIN_INTERVAL", "choose_mode", "duration", "fit_cost_model"]

MODES = ("bar", "plain", "quiet")
PLAIN_INTERVAL = 10.0  # seconds between count / in-stage lines in plain mode (result and stage lines always show)
TICK = 1.0  # seconds between bar refreshes while a stage runs
WITHIN_EVERY = 0.5  # seconds between updates of the in-stage count in the bar
MIN_CALIBRATION = 2  # finished items before an ETA is shown (one item cannot tell overhead from cost)


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


def fit_cost_model(samples: Sequence[Tuple[float, float]]) -> Optional[Tuple[float, float]]:
    """(a, b) with seconds ≈ a + b·cost, a, b ≥ 0, least squares over ``samples`` of (cost,
    seconds); None with fewer than `MIN_CALIBRATION` samples or when no such fit exists (the
    costlier items were faster: the slope stays negative as the earliest, warm-up, samples are
    dropped one at a time down to `MIN_CALIBRATION`).
    Equal costs give the plain rate (a = 0). Display only: floats are fine here."""
    s = list(samples)
    if len(s) < MIN_CALIBRATION:
        return None
    n = len(s)
    mc, mt = sum(c for c, _ in s) / n, sum(t for _, t in s) / n
    var = sum((c - mc) ** 2 for c, _ in s)
    if mc <= 0:
        return None
    if var <= 1e-12 * mc * mc:  # one cost: only the rate per unit of cost is known
        return 0.0, mt / mc
    b = sum((c - mc) * (t - mt) for c, t in s) / var
    if b < 0:
        return fit_cost_model(s[1:]) if n > MIN_CALIBRATION else None
    a = mt - b * mc
    if a < 0:  # no overhead: proportional through 0
        return 0.0, sum(c * t for c, t in s) / sum(c * c for c, _ in s)
    return a, b


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
    ``with``) ends it. ``clock``: seconds, monotonic (default ``time.perf_counter``; tests pass
    a fake)."""

    def __init__(self, total: Optional[int] = None, desc: str = "", unit: str = "it", *, quiet: bool = False,
                 file: Optional[TextIO] = None, mode: Optional[str] = None, interval: float = PLAIN_INTERVAL,
                 costs: Optional[Sequence[float]] = None, clock: Optional[Callable[[], float]] = None):
        self._now = clock or (lambda: time.perf_counter())
        self.file = file or sys.stderr
        self.mode = choose_mode(quiet, self.file, mode)
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        if costs is not None and (total is None or len(costs) != total or any(c <= 0 for c in costs)):
            raise ValueError("costs needs one positive cost per item")
        self.costs = list(costs) if costs is not None else None
        self.done = 0
        self._done_cost = 0.0
        self.item = ""
        self.samples: List[Tuple[float, float]] = []  # (cost, seconds) of each finished item: the ETA's calibration
        self.start = self._last_line = self._last_done = self._now()
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
            self._stage, self._stage_start, self._within = label, self._now(), None
            if self.mode == "plain" and line:
                self._line(self._about(line))
            self._postfix()

    def within(self, done: int, total: int, what: str) -> None:
        """Progress inside the running stage: ``done`` of ``total`` ``what`` (e.g. layers,
        examples). The bar shows it at most every half second; plain mode prints a line at most
        every ``interval`` seconds once the stage has run that long."""
        now = self._now()
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
            elif self.mode == "plain" and self._now() - self._last_status >= self.interval:
                self._last_status = self._now()
                self._line(self._about(text))

    def update(self, n: int = 1, message: Optional[str] = None, cost: Optional[float] = None) -> None:
        """``n`` more items done. ``message``: a result line ``[k/n] message (elapsed, ETA)``
        (bar: written above the bar); without one, plain mode prints a count line at most every
        ``interval`` seconds and when the total is reached. ``cost``: the cost of the items just
        done when they finish out of order (Dask); by default the next ``n`` of ``costs``."""
        with self._lock:
            now = self._now()
            k = self.done + n
            before = self._done_cost
            each = [cost / n] * n if cost is not None and n > 0 else [self._item_cost(i) for i in range(self.done, k)]
            spent, self._last_done = now - self._last_done, now
            total_cost = sum(each)
            self.samples += [(c, spent * (c / total_cost if total_cost > 0 else 1 / n)) for c in each]
            self._done_cost += total_cost
            self.done = k
            self._stage = self._within = None
            if self.mode == "quiet":
                return
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
        """Seconds still to go from the calibrated cost model (`fit_cost_model` over the finished
        items): a + b·cost for each item left, less the time already spent on the one under way
        (never below what the others need). None — "ETA unknown" — before `MIN_CALIBRATION`
        items have finished, when the samples admit no fit, or without a total."""
        if self.total is None or self.done >= self.total:
            return None
        fit = fit_cost_model(self.samples)
        if fit is None:
            return None
        a, b = fit
        left = self.total - self.done
        cost_left = max(self._cost(self.total) - self._done_cost, 0.0)
        # the item under way: the next in order (costs known), else an average one
        current = a + b * (self._item_cost(self.done) if self.costs is not None else cost_left / left)
        spent = (self._now() if now is None else now) - self._last_done
        return a * left + b * cost_left - min(max(spent, 0.0), current)

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

    def _item_cost(self, i: int) -> float:
        """The expected cost of item ``i`` (0-based; 1 without costs)."""
        if self.costs is None:
            return 1.0
        return float(self.costs[i]) if i < len(self.costs) else 0.0

    def _counter(self, k: int) -> str:
        return f"[{k}]" if self.total is None else f"[{k}/{self.total}]"

    def _about(self, text: str) -> str:
        """``[k/n] item: text`` for the item being worked on (k = items done + 1)."""
        k = self.done + 1 if self.total is None or self.done < self.total else self.done
        return f"{self._counter(k)} {self.item + ': ' if self.item else ''}{text}"

    def _line(self, text: str) -> None:
        self._last_line = self._now()
        print(text, file=self.file, flush=True)

    def _timing(self, now: float) -> str:
        out = f"elapsed {duration(now - self.start)}"
        if self.total is None or self.done >= self.total:
            return out
        eta = self.eta(now)
        return out + (f", ETA {duration(eta)}" if eta is not None else ", ETA unknown")

    def _postfix(self) -> None:
        if self._bar is None:
            return
        now = self._now()
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
