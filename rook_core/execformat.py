"""Whether the system can start an executable file that is a program, not a script.

A file marked executable that has no ``#!`` line is started by the kernel only
when it is a program for this machine (an ELF file of its architecture) or a
``binfmt_misc`` handler takes it (qemu-user for another architecture's
programs, Wine for Windows ones). Anything else fails every time with
``Exec format error``, so Rook refuses it before a run, once per hook entry
(``rook_plugins.script``), and ``rook doctor`` lists it; but only where Rook
can see the handlers (``/proc/sys/fs/binfmt_misc`` mounted). In a container
it usually is not, while the host's handlers still start such programs (a
multi-architecture build's qemu-user): there nothing is refused, ``rook
doctor`` notes it, and a hook the system then refuses is explained
(``failed=True``). Linux only: elsewhere nothing is refused.
"""

from __future__ import annotations

import functools
import os
import struct
import sys
from pathlib import Path

ELF_MAGIC = b"\x7fELF"

MACHINES = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    243: "riscv",
    258: "loongarch",
}
"""ELF ``e_machine`` values, named as ``uname -m`` names them."""

# a 64-bit machine that usually runs its 32-bit forerunner's programs too
RUNS_ALSO = {62: {3}, 183: {40}}

KINDS = (
    (b"MZ", "a Windows program (.exe)"),
    (b"\xcf\xfa\xed\xfe", "a macOS program (Mach-O)"),
    (b"\xce\xfa\xed\xfe", "a macOS program (Mach-O)"),
    (b"\xca\xfe\xba\xbe", "a macOS program (Mach-O) or a Java class file"),
    (b"PK\x03\x04", "a zip archive (a .jar?)"),
)

BINFMT = Path("/proc/sys/fs/binfmt_misc")


def elf_machine(head: bytes) -> int | None:
    """The ``e_machine`` of an ELF file starting with ``head``; None for another file."""
    if len(head) < 20 or not head.startswith(ELF_MAGIC):
        return None
    order = "<" if head[5] == 1 else ">"
    return int(struct.unpack(order + "H", head[18:20])[0])


KERNEL_MACHINES = {"i686": 3, "i586": 3, "armv7l": 40, "armv8l": 40, "arm64": 183}
"""``uname -m`` names that are no :data:`MACHINES` value, as ``e_machine``."""


def kernel_machine() -> int | None:
    """The ``e_machine`` of the kernel's own architecture (``uname -m``): a 32-bit
    userland (the running Python's) on a 64-bit kernel runs both kinds."""
    name = os.uname().machine
    return KERNEL_MACHINES.get(name) or next((k for k, v in MACHINES.items() if v == name), None)


def handlers_visible() -> bool:
    """Whether Rook can see the system's ``binfmt_misc`` handlers (mounted: its
    ``status`` file is there); a container usually cannot, though the host's apply."""
    return (BINFMT / "status").is_file()


@functools.lru_cache(maxsize=1)
def host_machine() -> int | None:
    """The ``e_machine`` of the programs this machine runs (the running Python's)."""
    for exe in ("/proc/self/exe", sys.executable):
        try:
            with open(exe, "rb") as fh:
                machine = elf_machine(fh.read(64))
        except OSError:
            continue
        if machine is not None:
            return machine
    return None


def machine_name(machine: int | None) -> str:
    return MACHINES.get(machine, f"machine {machine}") if machine is not None else "unknown"


def _handled(head: bytes, path: Path) -> bool:
    """Whether an enabled ``binfmt_misc`` handler takes the file (its magic bytes, under
    its mask, at its offset; or its extension). Unreadable entries count as taking it:
    never refuse what the system might start."""
    try:
        if (BINFMT / "status").read_text().strip() != "enabled":
            return False
        names = [n for n in os.listdir(BINFMT) if n not in ("status", "register")]
    except OSError:
        return False
    for name in names:
        try:
            lines = (BINFMT / name).read_text().splitlines()
        except OSError:
            return True
        if not lines or lines[0].strip() != "enabled":
            continue
        fields = dict(line.strip().partition(" ")[::2] for line in lines[1:])
        try:
            if "extension" in fields:
                if path.name.endswith(fields["extension"].strip()):
                    return True
                continue
            offset = int(fields.get("offset", "0"))
            magic = bytes.fromhex(fields["magic"])
            mask = bytes.fromhex(fields.get("mask", "ff" * len(magic)))
        except (KeyError, ValueError):
            return True
        data = head[offset : offset + len(magic)]
        if len(data) == len(magic) and all(
            (d & m) == (g & m) for d, g, m in zip(data, magic, mask, strict=False)
        ):
            return True
    return False


def cannot_start(path: Path, head: bytes, failed: bool = False) -> str | None:
    """Why the system cannot start the executable file ``path`` (whose first bytes,
    at least 64, are ``head``) that has no ``#!`` line and is no text: an ELF program
    for another machine, a Windows or macOS program, data. None when it can, or
    when Rook cannot tell: not Linux, or ``binfmt_misc``'s handlers not visible
    (:func:`handlers_visible`), unless the system already refused to start it
    (``failed``: no handler took it)."""
    if not sys.platform.startswith("linux") or head.startswith(b"#!"):
        return None
    if not failed and not handlers_visible():
        return None
    machine = elf_machine(head)
    if machine is not None:
        host = host_machine()
        if host is None or machine == host or machine in RUNS_ALSO.get(host, ()):
            return None
        if machine == kernel_machine():
            return None
        if not failed and _handled(head, path):
            return None
        return (
            f"it is a program for {machine_name(machine)}, and this machine is "
            f"{machine_name(host)}, so the system cannot start it ({path}); use a build "
            "for this machine (or register an emulator, qemu-user, with binfmt_misc)"
        )
    if head.startswith(ELF_MAGIC) or (not failed and _handled(head, path)):
        return None
    kind = next((k for magic, k in KINDS if head.startswith(magic)), None)
    return (
        f"it is executable but is {kind or 'no program this system can start'} (no ELF "
        f"program, no #! line), so the system cannot start it ({path})"
    )
