"""The memory a process and every process under it hold together, sampled while it runs.

ru_maxrss gives one process's peak, and counts the pages of memory-mapped files it touched (which
the kernel can drop and read again). A start that forks workers needs the sum over the tree at
its fullest moment, and what a machine must really have is the anonymous part (RssAnon: heap,
stacks, copies), so both are sampled from /proc every `interval` seconds.

A sum of RSS counts a page every process maps once per process: the memory-mapped set that the
training process and its workers all read, the pages a forked worker shares with its parent. The
proportional set size (Pss, /proc/PID/smaps_rollup) charges each process its share of such a page,
so the tree's summed Pss is the memory it holds, each page once; it is sampled beside the others.
"""

import threading
from pathlib import Path


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _fields_kib(path: str, names: tuple[str, ...]) -> list[int]:
    """The KiB values of the `names` lines ("VmRSS:", "Pss:") of a /proc file; zeros once the
    process has gone."""
    values = dict.fromkeys(names, 0)
    try:
        for line in Path(path).read_text().splitlines():
            name, *rest = line.split()
            if name in values:
                values[name] = int(rest[0])
    except (OSError, ValueError, IndexError):
        pass
    return [values[name] for name in names]


def tree_kib(root: int) -> tuple[int, int, int]:
    """Summed VmRSS, RssAnon and Pss (KiB) of `root` and its descendants."""
    tree, todo, rss, anon, pss = _children(), [root], 0, 0, 0
    while todo:
        pid = todo.pop()
        one_rss, one_anon = _fields_kib(f"/proc/{pid}/status", ("VmRSS:", "RssAnon:"))
        (one_pss,) = _fields_kib(f"/proc/{pid}/smaps_rollup", ("Pss:",))
        rss, anon, pss = rss + one_rss, anon + one_anon, pss + one_pss
        todo.extend(tree.get(pid, []))
    return rss, anon, pss


class TreeMemory:
    """Samples `tree_kib(pid)` in a thread until `stop()`; `peak_rss_gib`, `peak_anon_gib` and
    `peak_pss_gib` are the largest sums seen."""

    def __init__(self, pid: int, interval: float = 0.25):
        self.pid, self.interval, self.rss, self.anon, self.pss = pid, interval, 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            rss, anon, pss = tree_kib(self.pid)
            self.rss, self.anon, self.pss = max(self.rss, rss), max(self.anon, anon), max(self.pss, pss)

    def stop(self) -> "TreeMemory":
        self._stop.set()
        self._thread.join()
        return self

    @property
    def peak_rss_gib(self) -> float:
        return self.rss / 2**20

    @property
    def peak_anon_gib(self) -> float:
        return self.anon / 2**20

    @property
    def peak_pss_gib(self) -> float:
        return self.pss / 2**20
