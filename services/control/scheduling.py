"""Which process gets the CPU first when the processes `finq up` starts compete for it.

The gateway does: when finq is offered more questions than it can answer, the gateway must
still have the CPU to take each connection and refuse the excess at once (503). Measured on
two cores at four times capacity (bench/overload.py) with every process equal, the gateway
got a third of a core, sat two thirds of its time in the run queue, and the connections it
had no time to take waited in the kernel's accept queue: fifteen seconds before an admitted
question was even read. So every other process (the stages, PostgreSQL, nats-server) runs
at a lower priority: they get what the gateway leaves, which is all of it when finq is not
overloaded.

Two knobs, because Linux has two: the process's nice value orders threads within one
scheduling group, and with autogroups (`kernel.sched_autogroup_enabled`, the default on
desktop and many server kernels) every session is a group of its own that competes with the
others as one, whatever its threads' nice values. `finq up` starts each process in its own
session, so the group's nice (/proc/PID/autogroup) is the one that counts there. Raising a
nice value needs no privilege. In containers each service has a cgroup of its own and the
CPU shares in docker-compose.yml (or the pods' CPU requests) do the same job.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

# Weight 110 against the gateway's 1024: the pipeline still gets the whole machine
# whenever the gateway does not need it.
PIPELINE_NICE = 10


def lower_priority(pid: int, nice: int) -> None:
    """Give process `pid` (and the threads and children it starts later) the nice value
    `nice`, and its autogroup too where the kernel has them. Best effort: a kernel or
    sandbox that refuses leaves the process at its priority, which changes speed under
    overload, never correctness."""
    if nice <= 0:
        return
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    # Without autogroups (or /proc) the write fails and the nice value above is what counts.
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def autogroup_nice(pid: int) -> int | None:
    """The nice value of the process's autogroup; None where the kernel has none."""
    try:
        text = Path(f"/proc/{pid}/autogroup").read_text()
    except OSError:
        return None
    # "/autogroup-123 nice 10"
    return int(text.split()[-1])
