"""Traces into scenarios: Darshan logs, as ``pfsqos trace import`` converts them."""

from __future__ import annotations

import os
import warnings
from typing import Optional, Sequence, Union

from . import _native
from ._scenario import PathLike, Scenario


def import_darshan(
    logs: Union[PathLike, Sequence[PathLike]],
    like: Optional[Union[Scenario, PathLike]] = None,
    *,
    scale: float = 1.0,
    ranks_per_node: int = 1,
    strict: bool = False,
) -> Scenario:
    """Darshan logs (one job each; formats 3.00 to 3.41) into one scenario, as
    ``pfsqos trace import LOGS [--like FILE] [--scale X] [--ranks-per-node N]``.

    Args:
        logs: a log's path, or several.
        like: a :class:`pfsqos.Scenario` or scenario file whose system (everything but the
            jobs and ``[appset]``) the result takes; default: 8 clients, two SSD servers
            of four OSTs.
        scale: multiplies every byte count (for quick runs).
        ranks_per_node: MPI ranks per compute node (a job's ``nodes`` is its ranks / this).
        strict: raise if any log is refused, instead of converting the others (each refused
            log is otherwise reported with a ``UserWarning``).

    Returns:
        the scenario (validated), named as the command line names it.

    Raises:
        ScenarioError: no log could be converted, a refused log with ``strict``, or a bad
            ``like`` scenario or option.
    """
    if isinstance(logs, (str, os.PathLike)):
        paths = [os.fspath(logs)]
    else:
        paths = [os.fspath(p) for p in logs]
    like_pair = None
    base_dir = None
    if isinstance(like, Scenario):
        like_pair = (like.file, like.to_toml())
        base_dir = like._base_dir
    elif like is not None:
        path = os.fspath(like)
        like_scenario = Scenario.load(path)  # the command line's checks and messages
        with open(path, encoding="utf-8") as f:
            like_pair = (path, f.read())
        base_dir = like_scenario._base_dir
    text, refused = _native.import_darshan(paths, like_pair, float(scale), int(ranks_per_node),
                                           bool(strict))
    for label, reason in refused:
        warnings.warn(f"pfsqos: refused {label}: {reason}", UserWarning, stacklevel=2)
    return Scenario.from_toml(text, file="<darshan import>", base_dir=base_dir)
