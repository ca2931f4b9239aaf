"""The tests drive the real `ptc serve` of the built binary: PTC_BINARY, else the checkout's dist/ptc."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def binary() -> str:
    path = os.environ.get("PTC_BINARY") or str(REPO / "dist" / "ptc")
    assert os.access(path, os.X_OK), f"{path} is missing: run `npm run build` first (or set PTC_BINARY)"
    return path


def descendants(pid: int) -> list:
    """Live descendants of pid as (pid, pgid) pairs, read from /proc."""
    table = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split(" ")
        if fields[0] != "Z":
            table.append((int(entry), int(fields[1]), int(fields[2])))
    found = []

    def visit(parent: int) -> None:
        for child, ppid, pgid in table:
            if ppid == parent:
                found.append((child, pgid))
                visit(child)

    visit(pid)
    return found


def alive(pids: set, pgids: set) -> list:
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split(" ")
        if fields[0] != "Z" and (int(entry) in pids or int(fields[2]) in pgids):
            left.append(int(entry))
    return left
