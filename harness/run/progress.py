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
