"""Progress bars for long runs: tqdm (its notebook widget in Jupyter) when it is installed."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

Progress = Union[None, bool, Callable[[float, float], Any]]


class _Bar:
    """Feeds a tqdm bar from the native callback ``(done, total)``."""

    def __init__(self, tqdm: Any, desc: str, total: float):
        self._bar = tqdm(total=total, desc=desc, leave=False,
                         bar_format="{l_bar}{bar}| [{elapsed}<{remaining}]")
        self._shown = 0.0

    def __call__(self, done: float, total: float) -> None:
        if total != self._bar.total:
            # The call's own count of runs (solo runs included) replaces the estimate.
            self._bar.total = total
            self._bar.refresh()
        if done > self._shown:
            self._bar.update(done - self._shown)
            self._shown = done

    def close(self) -> None:
        self._bar.close()


def make(progress: Progress, desc: str, total: float) -> "Optional[Any]":
    """The callback to pass to the native call, or None.

    ``progress``: None (a tqdm bar when tqdm is installed), False (none), True (a tqdm bar;
    ImportError without tqdm) or a callable taking ``(done, total)`` in runs.
    """
    if progress is False:
        return None
    if callable(progress) and progress is not True:
        return progress
    try:
        from tqdm.auto import tqdm  # type: ignore[import-not-found]
    except ImportError:
        if progress is True:
            raise
        return None
    return _Bar(tqdm, desc, total)


def close(cb: Any) -> None:
    """Closes the bar that :func:`make` made (a callable of the caller's is left alone)."""
    if isinstance(cb, _Bar):
        cb.close()
