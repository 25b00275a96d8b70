"""A progress bar for long runs (rich, on stderr)."""
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RichProgress:
    def __init__(self):
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self._task = None

    def start(self, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("starting", total=total)

    def describe(self, text: str) -> None:
        self._bar.update(self._task, description=text[:60].ljust(60))

    def advance(self, label: str) -> None:
        self._bar.advance(self._task)

    def stop(self) -> None:
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

    def advance(self, label: str) -> None:
        self.parent._bar.advance(self._task)

    def stop(self) -> None:
        """The display stops with the whole run (cli), not with one lane."""


class NullProgress:
    """A run's progress where nobody watches (tests, lanes' and clusters' parts)."""
    def lane(self, name): return self
    def start(self, total): pass
    def advance(self, label): pass
    def describe(self, text): pass
    def stop(self): pass
