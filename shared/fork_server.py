"""finq's fork server: one process per parent that has imported what its children run, so
a child costs a fork (milliseconds) rather than an interpreter start and its imports
(a second or more of CPU for a stage).

Python's multiprocessing keeps one fork server per process, with one list of modules to
import before the first child; every user adds to that list here rather than replacing
another's. Its users: the children that read untrusted files (shared/limited_child.py) and
the stage processes `finq up` and the tests run (services/control/stage_process.py).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable

CONTEXT = multiprocessing.get_context("forkserver")
# "__main__" first, as multiprocessing's own default list has it: the server imports the
# parent's main module once (a script runs as "__mp_main__", its `if __name__ ==
# "__main__":` part skipped), where each child would otherwise import it again to unpickle
# what it runs. So, as with every multiprocessing program, a script that starts children
# keeps its work under that guard.
_PRELOADED: list[str] = ["__main__"]


def preload(modules: Iterable[str]) -> None:
    """Have the fork server import `modules` before its first child. A module asked for
    after the server started is imported by each child that needs it instead."""
    for module in modules:
        if module not in _PRELOADED:
            _PRELOADED.append(module)
    CONTEXT.set_forkserver_preload(list(_PRELOADED))
