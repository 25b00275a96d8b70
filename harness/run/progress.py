"""A run's progress on stderr: a rich bar on a terminal, a line every LINE_EVERY_S where stderr is a
file or a pipe (a CI log, `ways run ... 2>&1 | tee`), which a live bar would leave empty until the end."""
import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

LINE_EVERY_S = 10.0


class RichProgress:
    def __init__(self, console: Console | None = None):
        console = console or Console(stderr=True)
        self._lines = not console.is_terminal
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=console, transient=False, disable=self._lines)
        self._task = None
        self._started = self._said = time.monotonic()
        self._stopped = False

    def start(self, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("starting", total=total)

    def describe(self, text: str) -> None:
        self._bar.update(self._task, description=text[:60].ljust(60))
        self.tick()

    def advance(self, label: str) -> None:
        self._bar.advance(self._task)
        self.tick()

    def tick(self, every: float = LINE_EVERY_S) -> None:
        """Without a terminal: one line per bar (done/total, elapsed, what runs now), at most every `every` s."""
        now = time.monotonic()
        if not self._lines or self._stopped or now - self._said < every:
            return
        self._said = now
        elapsed = time.strftime("%M:%S", time.gmtime(now - self._started))
        for task in self._bar.tasks:
            print(f"[{elapsed}] {task.completed:.0f}/{task.total:.0f} {task.description.strip()}",
                  file=sys.stderr, flush=True)

    def stop(self) -> None:
        if not self._stopped:           # the last line once: a run and its caller may both stop it
            self.tick(every=0.0)
            self._stopped = True
        self._bar.stop()

    def lane(self, name: str) -> "LaneProgress":
        """A bar of its own for one lane of `ways run --gpus`, on this display."""
        return LaneProgress(self, name)


class LaneProgress:
    def __init__(self, parent: RichProgress, name: str):
        self.parent, self.name, self._task = parent, name, None

    def start(self, total: int) -> None:
        bar = self.parent._bar
        bar.start()                      # once for all lanes: rich's Progress starts only once
        self._task = bar.add_task(f"{self.name} starting", total=total)

    def describe(self, text: str) -> None:
        self.parent._bar.update(self._task, description=f"{self.name} {text}"[:60].ljust(60))
        self.parent.tick()

    def advance(self, label: str) -> None:
        self.parent._bar.advance(self._task)
        self.parent.tick()

    def stop(self) -> None:
        """The display stops with the whole run (cli), not with one lane."""


class NullProgress:
    """A run's progress where nobody watches (tests, lanes' and clusters' parts)."""
    def lane(self, name): return self
    def start(self, total): pass
    def advance(self, label): pass
    def describe(self, text): pass
    def stop(self): pass
