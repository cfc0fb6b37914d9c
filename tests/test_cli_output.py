"""What the real ``rook`` command does with its output streams: a reader that
leaves (``rook run 2>&1 | head -1``), colours, pipes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOK = [sys.executable, "-m", "rook_core"]


@pytest.fixture
def example(tmp_path):
    """``rook init --example``: a workspace whose ``rook run`` passes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    done = subprocess.run(
        [*ROOK, "init", "--project", "demo", "--agent", "sample", "--example"],
        cwd=ws, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return ws, ws / ".testmuai/rook/projects/demo/agents/sample"


@pytest.fixture(scope="module")
def example_with_a_long_run(tmp_path_factory):
    """An ``example`` workspace holding one passed run of 40 repeats (a long
    table, a report over 70,000 bytes), made once: each test reading it takes a
    copy of its own."""
    ws = tmp_path_factory.mktemp("example-run") / "ws"
    ws.mkdir()
    for argv in (["init", "--project", "demo", "--agent", "sample", "--example"],
                 ["run", "-q", "--repeat", "40"]):
        done = subprocess.run([*ROOK, *argv], cwd=ws, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    return ws


def closed_pipe() -> int:
    """The write end of a pipe whose reader has already left."""
    r, w = os.pipe()
    os.close(r)
    return w


@pytest.mark.parametrize("stream", ["stderr", "stdout"])
def test_a_reader_that_left_never_stops_the_run(example, stream):
    # `rook run 2>&1 | head -1`: the progress lines go to a pipe nobody reads;
    # the run still runs every scenario, records it, and exits with its own code
    ws, agent = example
    w = closed_pipe()
    try:
        other = subprocess.DEVNULL
        proc = subprocess.run(
            [*ROOK, "run", "--repeat", "20", "-j", "4"],
            cwd=ws, stdin=subprocess.DEVNULL, timeout=120,
            stdout=w if stream == "stdout" else other,
            stderr=w if stream == "stderr" else other,
        )
    finally:
        os.close(w)
    (run,) = (agent / "runs").iterdir()
    report = json.loads((run / "report.json").read_text())
    assert report["summary"]["passed"] == 60, report["summary"]
    assert len(list((run / "scenarios").iterdir())) == 60
    assert proc.returncode == 0


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_standard_error_that_cannot_be_written_never_stops_the_run(example, extra):
    # `rook run 2>>ci.log` on a full disk: the first progress line raised ENOSPC in the
    # middle of the run, which stopped with part of its scenarios recorded, no table or
    # document on standard output, and exit 2 ("nothing was run"); nothing can be said
    # where standard error goes, so what would go there is dropped, as for a reader
    # that left, and the run ends as it would have
    ws, agent = example
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*ROOK, "run", "--repeat", "5", *extra], cwd=ws,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=full,
                              text=True, timeout=120)
    (run,) = (agent / "runs").iterdir()
    report = json.loads((run / "report.json").read_text())
    assert report["summary"]["passed"] == 15, report["summary"]
    assert proc.returncode == 0
    if extra:
        assert json.loads(proc.stdout)["summary"]["passed"] == 15
    else:
        assert "15 passed" in proc.stdout


def test_a_non_blocking_standard_output_gets_the_whole_document(
    example_with_a_long_run, tmp_path
):
    # a parent that left standard output non-blocking (O_NONBLOCK on a pipe or a terminal
    # it shares, as Node does): a --json document longer than the pipe holds was cut at
    # 65,536 bytes with exit 0 and nothing said (a short write, its count ignored)
    import fcntl
    import select
    import time

    ws = tmp_path / "ws"
    shutil.copytree(example_with_a_long_run, ws, symlinks=True)
    (run,) = (ws / ".testmuai/rook/projects/demo/agents/sample/runs").iterdir()
    whole = (run / "report.json").read_bytes()
    assert len(whole) > 70_000
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        proc = subprocess.Popen([*ROOK, "report", run.name, "--json"], cwd=ws, stdout=w,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        time.sleep(1)  # the pipe fills before it is read
        got = b""
        while True:  # to its end (this test holds the write end too: no end of file)
            if select.select([r], [], [], 0.5)[0]:
                got += os.read(r, 1 << 16)
            elif proc.poll() is not None:
                break
        with proc.stderr:
            said = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, said
        assert not os.get_blocking(w)  # left as Rook found it
    finally:
        os.close(r)
        os.close(w)
    assert json.loads(got)["summary"]["passed"] == 120, said


@pytest.mark.parametrize("streams", ["stdout", "both"])
def test_diff_whose_reader_left_still_exits_with_its_verdict(example, streams):
    # `rook diff latest~1 latest | head -1` (a CI step under pipefail) exited 1,
    # "something regressed", when the reader left before the table was written
    ws, agent = example
    for _ in range(2):
        assert subprocess.run([*ROOK, "run", "-q"], cwd=ws, capture_output=True,
                              timeout=120).returncode == 0

    def diff() -> int:
        w = closed_pipe()
        try:
            return subprocess.run(
                [*ROOK, "diff", "latest~1", "latest"], cwd=ws, stdin=subprocess.DEVNULL,
                stdout=w, stderr=w if streams == "both" else subprocess.DEVNULL, timeout=120,
            ).returncode
        finally:
            os.close(w)

    assert diff() == 0  # nothing regressed
    script = agent / "scripts" / "example_agent.py"
    script.write_text(script.read_text().replace(
        'if "cancel" in lowered and "yes" in lowered:', 'if "cancel" in lowered:'))
    assert subprocess.run([*ROOK, "run", "-q"], cwd=ws, capture_output=True,
                          timeout=120).returncode == 1
    assert diff() == 1  # keep-order regressed


def test_merge_whose_reader_left_still_exits_with_its_verdict(example):
    # `rook merge --run ci | head -1`: a merged run that passed exited 1, as if
    # it had failed, when the reader left before the table was written
    ws, _ = example
    for shard in ("1/2", "2/2"):
        done = subprocess.run([*ROOK, "run", "--run-name", "ci", "--shard", shard, "-q"],
                              cwd=ws, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    w = closed_pipe()
    try:
        proc = subprocess.run([*ROOK, "merge", "--run", "ci"], cwd=ws, stdin=subprocess.DEVNULL,
                              stdout=w, stderr=w, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 0


@pytest.mark.parametrize("args", [["report", "latest"], ["report", "latest", "--json"],
                                  ["runs", "show", "latest"], ["runs", "show", "latest", "--json"],
                                  ["runs"], ["runs", "--json"]])
def test_showing_a_run_to_a_reader_that_left_exits_0(example_with_a_long_run, tmp_path, args):
    # `rook report latest | head -1` exited 1 when the reader left before the
    # table was written (`--report markdown:-` exited 0); history.md: they
    # display a run and exit 0 whatever its verdict
    ws = tmp_path / "ws"
    shutil.copytree(example_with_a_long_run, ws, symlinks=True)
    w = closed_pipe()
    try:
        proc = subprocess.run([*ROOK, *args], cwd=ws, stdin=subprocess.DEVNULL, stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def exit_codes_to_a_reader_that_left(args: list[str], cwd: Path, stream: str) -> tuple[int, int, str]:
    """``rook ARGS`` with ``stream`` (stdout, stderr or both) a pipe whose reader
    left, then with it read to the end: both exit codes, and the first's stderr."""
    w = closed_pipe()
    try:
        out = w if stream in ("stdout", "both") else subprocess.DEVNULL
        err = w if stream in ("stderr", "both") else subprocess.PIPE
        left = subprocess.run([*ROOK, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                              stderr=err, timeout=120)
    finally:
        os.close(w)
    read = subprocess.run([*ROOK, *args], cwd=cwd, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120)
    said = (left.stderr or b"").decode("utf-8", "replace")
    return left.returncode, read.returncode, said


@pytest.mark.parametrize("stream", ["stdout", "both"])
@pytest.mark.parametrize("args", [["doctor"], ["--help"], ["--version"], ["profile", "list"],
                                  ["profile", "show", "example"], ["plugins"], ["run", "--help"],
                                  ["profile", "--help"], ["completion", "bash"]])
def test_any_command_whose_reader_left_ends_quietly_with_its_own_exit_code(
    example, args, stream
):
    # `rook doctor | head -1`, `rook --help | head -1`: exited 1 with nothing said
    # (Click's answer to a closed pipe) where the command read to the end exits 0;
    # every command keeps its own exit code, as rook run, runs, report and diff did
    ws, _ = example
    left, read, said = exit_codes_to_a_reader_that_left(args, ws, stream)
    assert (left, read) == (0, 0), said
    assert said == ""


def test_doctor_whose_reader_left_still_says_its_problem_in_its_exit_code(tmp_path):
    # no workspace here: doctor's verdict is 1 whether or not its reader stayed
    left, read, said = exit_codes_to_a_reader_that_left(["doctor"], tmp_path, "stdout")
    assert (left, read) == (1, 1)
    assert "Traceback" not in said and "Broken pipe" not in said


@pytest.mark.parametrize("extra", [[], ["--json"], ["--report", "junit:-"]])
def test_a_failing_run_whose_reader_left_is_recorded_and_exits_1(example, extra):
    # the reader of `rook run ... | head -3` left: every scenario run is recorded,
    # its report written, and the exit code is still the run's verdict (1)
    ws, agent = example
    script = agent / "scripts" / "example_agent.py"
    script.write_text(script.read_text().replace(
        'if "cancel" in lowered and "yes" in lowered:', 'if "cancel" in lowered:'))
    w = closed_pipe()
    try:
        proc = subprocess.run([*ROOK, "run", "--repeat", "10", *extra], cwd=ws,
                              stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Broken pipe" not in proc.stderr
    (run,) = (agent / "runs").iterdir()
    report = json.loads((run / "report.json").read_text())
    assert len(list((run / "scenarios").iterdir())) == 30
    assert report["summary"]["failed"] == 10 and report["summary"]["passed"] == 20


def on_a_terminal(args: list[str], cwd: Path, **env: str) -> str:
    """What ``rook ARGS`` prints to a terminal (a pseudo-terminal on stdout)."""
    code, out = on_a_terminal_of(80, args, cwd, stderr=False, **env)
    assert code == 0
    return out


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_doctor_has_no_colours_when_asked_for_none(example, env):
    ws, _ = example
    assert "\x1b[" in on_a_terminal(["doctor"], ws, TERM="xterm")  # colours by default
    plain = on_a_terminal(["doctor"], ws, **env)
    assert "\x1b[" not in plain and "no problems found" in plain


def test_an_error_or_doctor_finding_shows_control_characters_as_escapes(example):
    # A scenario file (one fetched from elsewhere, or written by an authoring
    # agent) whose criterion key held ESC ]0; (a title), BEL and U+202E went raw
    # into `rook: error:` and rook doctor's finding: the file could retitle the
    # terminal or show the rest of the line backwards. Shown as escapes, as the
    # progress lines and the table show a hook's.
    ws, agent = example
    (agent / "scenarios/z.yaml").write_text(
        'id: esc\ngoal: hi\ncriteria:\n  - "cont\\e]0;pwned\\ains\\u202e": x\n'
    )
    run = subprocess.run([*ROOK, "run"], cwd=ws, capture_output=True, text=True, timeout=60)
    doctor = subprocess.run([*ROOK, "doctor"], cwd=ws, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    assert run.returncode == 2 and doctor.returncode == 1, (run.stderr, doctor.stdout)
    for out in (run.stderr, doctor.stdout):
        assert "criteria.0.cont\\x1b]0;pwned\\x07ins\\u202e: unknown criterion type" in out, out
        assert not [c for c in out if c != "\n" and (ord(c) < 32 or c == "\u202e")], out


def raw_controls(out: str) -> list[str]:
    return [c for c in out if c != "\n" and (ord(c) < 32 or c == "\u202e")]


def test_a_report_path_with_control_characters_is_shown_as_escapes(example):
    # rook report ID --report json:PATH said "wrote json report to PATH" with the
    # path's ESC ]0; (a title), BEL and U+202E raw: a name from a script could
    # retitle the terminal. The file is written under its name; the line escapes it.
    ws, _ = example
    run = subprocess.run([*ROOK, "run"], cwd=ws, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    name = "out/r\x1b]0;pwned\x07\u202e.json"
    shown = "out/r\\x1b]0;pwned\\x07\\u202e.json"
    for args in (["json:" + name], ["json:" + name + "/no/such/dir/r.json"]):
        done = subprocess.run([*ROOK, "report", "latest", "--report", *args], cwd=ws,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert shown in done.stderr, done.stderr
        assert not raw_controls(done.stderr), done.stderr
    assert (ws / name).is_file()


def test_init_shows_a_workspace_path_with_control_characters_as_escapes(example):
    # rook init -w DIR said "created DIR/..." and, DIR being inside another
    # workspace, warned naming it three times, with DIR's ESC ]0;, BEL and
    # U+202E raw. The folders are made under their real name; the lines escape it.
    ws, _ = example
    name = "sub\x1b]0;pwned\x07\u202e"
    done = subprocess.run(
        [*ROOK, "init", "--project", "p", "--agent", "a", "-w", name],
        cwd=ws, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "created " + str(ws / "sub\\x1b]0;pwned\\x07\\u202e") in done.stdout, out
    assert "is inside the workspace" in done.stderr, out
    assert not raw_controls(out), out
    assert (ws / name / ".testmuai/rook/projects/p/agents/a").is_dir()


def test_the_run_line_shows_a_workspace_path_with_control_characters_as_escapes(tmp_path):
    # the table's last line, "run ID: DIR", of rook run, rook runs show, rook report
    # and rook merge, printed a workspace folder's ESC ]0;, BEL and U+202E raw
    ws = tmp_path / "ws\x1b]0;pwned\x07\u202e"
    ws.mkdir()
    made = subprocess.run([*ROOK, "init", "--project", "d", "--agent", "a", "--example"],
                          cwd=ws, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr
    shown = str(tmp_path / "ws\\x1b]0;pwned\\x07\\u202e") + "/.testmuai/rook/projects/d/agents/a"
    for args in (["run"], ["runs", "show", "latest"], ["report", "latest"]):
        done = subprocess.run([*ROOK, *args], cwd=ws, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert f": {shown}/runs/" in done.stdout, (args, done.stdout)
        assert not raw_controls(done.stdout + done.stderr), (args, done.stdout, done.stderr)


@pytest.mark.parametrize("args", [[], ["profile"]])
def test_a_group_alone_prints_its_help_on_standard_output_and_exits_0(tmp_path, args):
    """`rook` or `rook profile` alone exited 0 with the help on standard output on
    Click 8.1, and 2 with it on standard error on Click 8.2+ (NoArgsIsHelpError):
    the same Rook behaved two ways. It is the help, as --help gives it: standard
    output, exit 0, on every Click."""
    proc = subprocess.run([sys.executable, "-m", "rook_core", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    helped = subprocess.run([sys.executable, "-m", "rook_core", *args, "--help"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert proc.stdout == helped.stdout
    assert proc.stdout.startswith(f"Usage: rook {' '.join([*args, ''])}[OPTIONS] COMMAND")


class _FailingFile:
    """A real regular file whose writes fail as a failing disk's or an NFS
    server's do (EIO): no file system here can be made to fail on request."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "w", encoding="utf-8")  # noqa: SIM115

    def fileno(self) -> int:
        return self.file.fileno()

    def write(self, data: str) -> int:
        import errno

        raise OSError(errno.EIO, os.strerror(errno.EIO))

    flush = lambda self: self.write("")  # noqa: E731


class _On:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def test_an_io_error_on_a_file_is_no_reader_that_left(tmp_path):
    """EIO on standard output was taken for a terminal that hung up whatever
    standard output was: ``rook runs --json > out.json`` on a failing disk (or
    NFS) dropped the document and exited with the command's code, nothing said.
    EIO means the reader left only on a terminal, a pipe or a socket."""
    import errno
    import pty
    import socket

    from rook_core.cli.streams import UntilTheReaderLeaves, reader_gone

    eio = OSError(errno.EIO, "Input/output error")
    failing = _FailingFile(tmp_path / "out.json")
    try:
        stream = UntilTheReaderLeaves(failing)
        with pytest.raises(OSError) as raised:
            stream.write("{}")
        assert raised.value.errno == errno.EIO and not stream.gone
        with pytest.raises(OSError):
            stream.flush()
        assert not reader_gone(eio, failing)
        # standard error that cannot be written, a file or not: nowhere is left to say it
        assert UntilTheReaderLeaves(failing, last_word=True).write("x") == 1
    finally:
        failing.file.close()

    # a terminal that hung up: a real EIO, and the reader is gone
    leader, follower = pty.openpty()
    os.close(leader)
    tty = os.fdopen(follower, "w", encoding="utf-8")
    try:
        stream = UntilTheReaderLeaves(tty)
        assert stream.write("x" * 10) == 10
        stream.flush()
        assert stream.gone
    finally:
        try:
            tty.close()
        except OSError:
            pass
    r, w = os.pipe()
    a, b = socket.socketpair()
    try:
        for fd in (w, b.fileno()):  # a pipe's or a socket's far end gone
            assert reader_gone(eio, _On(fd))
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()
    assert reader_gone(BrokenPipeError(errno.EPIPE, "Broken pipe"), failing)


def on_a_terminal_of(columns: int, args: list[str], cwd: Path, stderr: bool = True,
                     **env: str) -> tuple[int, str]:
    """The exit code of ``rook ARGS`` and what it printed, standard output and
    error both (``stderr``: else standard output alone), on a terminal ``columns``
    wide (a pseudo-terminal of that size; ``COLUMNS`` only where ``env`` sets it)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    try:
        proc = subprocess.Popen(
            [*ROOK, *args], cwd=cwd, stdout=follower,
            stderr=follower if stderr else subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, env={**environ, **env},
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=60)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


LONG_REASON = "the refund was promised but never issued " * 6


@pytest.fixture
def long_failure(example):
    """The example workspace with one more scenario that fails with a reason of
    about 300 characters."""
    ws, agent = example
    (agent / "scenarios/long-reason.yaml").write_text(
        "id: long-reason\ngoal: Hi there!\ncriteria:\n"
        f"  - contains: {json.dumps(LONG_REASON.strip())}\n"
    )
    return ws, agent


@pytest.mark.parametrize("columns", [80, 120])
def test_the_results_table_and_progress_lines_fit_the_terminal(long_failure, columns):
    """The results table cut each reason at 90 characters, whatever the terminal:
    on an 80-column terminal every row of a failed scenario (48 characters before
    its reason) wrapped onto a second line, the table's columns lost in the
    wrap, and so did its progress line. On a terminal the reason is cut to what
    the width leaves, in the table (``rook run``, ``rook runs show``, ``rook
    report``) and the progress lines alike."""
    ws, _ = long_failure
    code, out = on_a_terminal_of(columns, ["run"], ws)
    assert code == 1, out
    rows = [ln for ln in out.splitlines() if "long-reason" in ln]
    assert len(rows) == 2 and all("did not find" in ln for ln in rows), out  # progress, table
    assert all(len(ln) <= columns for ln in rows), [len(ln) for ln in rows]
    assert all(ln.endswith("…") for ln in rows), rows
    for again in (["runs", "show", "latest"], ["report", "latest"]):
        code, out = on_a_terminal_of(columns, again, ws)
        (row,) = [ln for ln in out.splitlines() if "long-reason" in ln]
        assert code == 0 and len(row) <= columns and row.endswith("…"), (again, row)


def test_a_wide_terminal_shows_more_of_a_reason_and_columns_is_its_width(long_failure):
    """A terminal wider than the table shows more of a reason than the 90
    characters a pipe gets; ``COLUMNS``, as every terminal program reads it,
    sets the width (``COLUMNS=40``: the reason keeps a readable minimum)."""
    ws, _ = long_failure
    piped = subprocess.run([*ROOK, "run", "-q"], cwd=ws, capture_output=True, text=True,
                           timeout=60)
    (piped_row,) = [ln for ln in piped.stdout.splitlines() if "long-reason" in ln]
    code, out = on_a_terminal_of(250, ["runs", "show", "latest"], ws)
    (wide_row,) = [ln for ln in out.splitlines() if "long-reason" in ln]
    assert code == 0 and len(wide_row) > len(piped_row) and len(wide_row) <= 250, out
    code, out = on_a_terminal_of(250, ["runs", "show", "latest"], ws, COLUMNS="100")
    (row,) = [ln for ln in out.splitlines() if "long-reason" in ln]
    assert len(row) == 100 and row.endswith("…"), row
    code, out = on_a_terminal_of(250, ["runs", "show", "latest"], ws, COLUMNS="40")
    (row,) = [ln for ln in out.splitlines() if "long-reason" in ln]
    reason = row.split("  ")[-1]
    assert len(reason) >= 30 and reason.startswith("1 criterion failed"), row


def test_rook_runs_fits_the_terminal_with_every_column_s_data(example):
    """``rook runs`` printed its 142-column table on any terminal: at 80 columns
    each row wrapped onto a second line. On a terminal narrower than the table
    it prints every column's data in fewer characters (the four counts in one
    column, the start without its year and seconds) and says what the short
    headings stand for; a wide terminal and a pipe get the full table."""
    ws, _ = example
    for argv in (["run", "-q"], ["run", "-q", "--repeat", "2"]):
        done = subprocess.run([*ROOK, *argv], cwd=ws, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    listed = json.loads(subprocess.run([*ROOK, "runs", "--json"], cwd=ws, capture_output=True,
                                       text=True, timeout=60).stdout)["runs"]
    code, out = on_a_terminal_of(80, ["runs"], ws)
    lines = out.splitlines()
    assert code == 0 and all(len(ln) <= 80 for ln in lines), [len(ln) for ln in lines]
    assert lines[0].split() == ["run", "started", "profile", "runs", "p/f/e/u", "rate", "cov",
                                "state"], out
    for run, row in zip(listed, lines[2:4], strict=True):
        cells = row.split()
        assert cells[0] == run["id"] and cells[3] == "example", row
        assert cells[4:] == [str(run["total"]), f"{run['total']}/0/0/0", "100.0%", "100.0%",
                             "complete"], row
    assert lines[4].startswith("p/f/e/u: passed/failed/errored/unverified"), out
    code, wide = on_a_terminal_of(160, ["runs"], ws)
    piped = subprocess.run([*ROOK, "runs"], cwd=ws, capture_output=True, text=True, timeout=60)
    assert wide.splitlines()[0] == piped.stdout.splitlines()[0], wide
    assert "unverified  pass rate" in wide and "p/f/e/u" not in wide + piped.stdout


def test_a_terminal_that_reports_no_width_is_a_terminal_of_80_columns(long_failure):
    """A pseudo-terminal that reports 0 columns (a serial console, a container's
    terminal not yet sized, ``script`` with no terminal behind it) was taken
    for a pipe: no start line, reasons cut at 90 characters, the full ``rook
    runs`` table. It is a terminal of 80 columns, as most tools take it."""
    ws, _ = long_failure
    code, out = on_a_terminal_of(0, ["run"], ws)
    assert code == 1 and out.startswith("running 4 scenarios with profile example"), out
    rows = [ln for ln in out.splitlines() if "long-reason" in ln]
    assert len(rows) == 2 and all(len(ln) <= 80 and ln.endswith("…") for ln in rows), rows
    code, out = on_a_terminal_of(0, ["runs"], ws)
    assert code == 0 and all(len(ln) <= 80 for ln in out.splitlines()), out
    assert out.splitlines()[0].split()[4] == "p/f/e/u", out


def test_the_summary_line_of_a_typical_run_fits_80_columns(long_failure):
    """The summary line under the results table was 81 characters for a run of
    6 passes and 2 failures (83 for 22 and 2): ``coverage 100.0% (decided/planned)``
    wrapped on an 80-column terminal. It says ``of planned``, as the pass rate says
    ``of decided``."""
    ws, _ = long_failure
    done = subprocess.run([*ROOK, "run", "-q", "--repeat", "2"], cwd=ws, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if " — pass rate " in ln]
    assert line == ("6 passed, 2 failed — pass rate 75.0% of decided, "
                    "coverage 100.0% of planned"), line
    assert len(line) <= 80


def test_progress_lines_name_a_scenario_run_as_the_table_does(example):
    """A progress line named a scenario run by its record's key (``greeting.2``,
    and ``greeting.1`` for a scenario run once) where the results table says
    ``greeting #2`` (and ``greeting``): one name for the user, in both."""
    ws, _ = example
    for argv, names in ((["run"], {"greeting", "keep-order", "order-status"}),
                        (["run", "--repeat", "2"], {f"{s} #{i}" for i in (1, 2) for s in
                                                    ("greeting", "keep-order", "order-status")})):
        done = subprocess.run([*ROOK, *argv], cwd=ws, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        progress = {ln[15:].split("  ")[0] for ln in done.stderr.splitlines()
                    if ln.startswith("  PASS ")}
        table = {ln.split("  ")[0] for ln in done.stdout.splitlines() if "  PASS  " in ln}
        assert progress == table == names, (done.stderr, done.stdout)


def test_a_run_on_a_terminal_says_what_it_runs_before_its_first_hook(example):
    """Nothing was printed until the first scenario run ended: a slow prepare
    hook looked like a hang. On a terminal ``rook run`` says first what it runs,
    as pytest says "collected N items"; piped (a CI log), with ``-q`` and on
    the standard output of ``--json`` it says nothing new."""
    ws, _ = example
    code, out = on_a_terminal_of(80, ["run", "--repeat", "2"], ws)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "running 6 scenario runs of 3 scenarios with profile example (concurrency 2)"
    assert lines[1].startswith("  PASS "), out
    code, out = on_a_terminal_of(80, ["run", "--run", "latest"], ws)
    assert code == 0 and out.splitlines()[0].startswith("resuming run "), out
    code, out = on_a_terminal_of(80, ["run", "--shard", "1/2", "--run-name", "ci-1"], ws)
    assert code == 0 and out.splitlines()[0] == (
        "running run ci-1, shard 1/2: 2 scenarios with profile example (concurrency 2)"), out
    for argv in (["run", "-q"], ["run", "--only", "greeting"]):
        code, out = on_a_terminal_of(80, argv, ws)
        said = [ln for ln in out.splitlines() if ln.startswith("running ")]
        assert code == 0 and said == ([] if "-q" in argv else [
            "running 1 scenario with profile example (concurrency 2)"]), out
    piped = subprocess.run([*ROOK, "run", "--json"], cwd=ws, capture_output=True, text=True,
                           timeout=60)
    assert piped.returncode == 0 and "running " not in piped.stderr, piped.stderr
    json.loads(piped.stdout)


def test_what_a_run_says_first_fits_the_terminal(example):
    """``rook run --run ID`` first said ``resuming run ID: 6 scenario runs of 3
    scenarios with profile example (concurrency 2)`` on one line, about 95
    characters with a run's own id: it wrapped on an 80-column terminal. It folds
    at a space within the width, the lines after the first indented."""
    ws, _ = example
    code, out = on_a_terminal_of(80, ["run", "-q", "--repeat", "2"], ws)
    assert code == 0, out
    run_id = json.loads(subprocess.run([*ROOK, "runs", "--json"], cwd=ws, capture_output=True,
                                       text=True, timeout=60).stdout)["runs"][0]["id"]
    whole = (f"resuming run {run_id}: 6 scenario runs of 3 scenarios with profile example "
             "(concurrency 2)")
    assert len(whole) > 80, whole
    for columns in (80, 50):
        code, out = on_a_terminal_of(columns, ["run", "--run", run_id], ws)
        lines = out.splitlines()
        said = lines[: next(i for i, ln in enumerate(lines) if ln.startswith("scenario "))]
        assert code == 0 and len(said) > 1, out
        assert all(len(ln) <= columns for ln in said), said
        assert all(ln.startswith("  ") for ln in said[1:]), said
        assert " ".join(ln.strip() for ln in said) == whole, said
    code, out = on_a_terminal_of(200, ["run", "--run", run_id], ws)
    assert out.splitlines()[0] == whole, out


def test_force_color_colours_doctor_where_no_terminal_is(example):
    """``FORCE_COLOR`` (force-color.org, as pytest, rich and Node's tools read it:
    a CI log such as GitHub Actions' shows colours, but is no terminal) was
    ignored: ``rook doctor``'s marks came plain. Set and not empty, it colours
    them, piped too and with ``TERM=dumb``; ``NO_COLOR`` still wins."""
    ws, _ = example

    def doctor(**env: str) -> str:
        environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        proc = subprocess.run([*ROOK, "doctor"], cwd=ws, capture_output=True, text=True,
                              env={**environ, **env}, timeout=60)
        assert proc.returncode == 0 and "no problems found" in proc.stdout, proc.stdout
        return proc.stdout

    assert "\x1b[" not in doctor()  # piped: plain
    assert "\x1b[32mok" in doctor(FORCE_COLOR="1")
    assert "\x1b[32mok" in doctor(FORCE_COLOR="true", TERM="dumb")
    assert "\x1b[" not in doctor(FORCE_COLOR="")
    assert "\x1b[" not in doctor(FORCE_COLOR="1", NO_COLOR="1")


@pytest.mark.parametrize("encoding, dash", [("latin-1", "\\u2014"), ("cp1252", "\u2014")])
def test_an_output_encoding_without_a_character_shows_it_as_an_escape(long_failure, encoding,
                                                                      dash):
    """Standard output in an encoding that lacks a character Rook prints (the
    summary line's dash, a cut reason's ellipsis: ``PYTHONIOENCODING=latin-1``, a
    Latin-1 locale) raised UnicodeEncodeError: ``rook run`` recorded its run, then
    printed a traceback for the table (exit 1, as for a failed scenario), and
    ``rook runs show`` another. The character is shown as its escape
    (``\\u2014``), and every command ends as it would have."""
    ws, _ = long_failure
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    proc = subprocess.run([*ROOK, "run", "-q"], cwd=ws, capture_output=True, env=env,
                          timeout=120)
    out, err = proc.stdout.decode(encoding), proc.stderr.decode(encoding)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "long-reason" in out and f"3 passed, 1 failed {dash} pass rate" in out, out
    for args in (["runs", "show", "latest"], ["report", "latest"], ["runs"], ["diff", "latest", "latest"]):
        proc = subprocess.run([*ROOK, *args], cwd=ws, capture_output=True, env=env, timeout=60)
        err = proc.stderr.decode(encoding)
        assert proc.returncode == 0 and "Traceback" not in err, (args, err)


def test_run_and_merge_say_where_each_report_went(example):
    """``rook run --report html:out/rook.html`` wrote the page and said nothing of
    it (``rook report`` says ``wrote html report to ...``; pytest says
    ``generated xml file: ...``): a user looked for it. Each report written is
    said on standard error, after the table, by ``rook run`` and ``rook merge``
    alike; standard output holds the table or the one document as before."""
    ws, _ = example
    proc = subprocess.run(
        [*ROOK, "run", "-q", "--report", "html:out/rook.html", "--report", "junit:out/rook.xml"],
        cwd=ws, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-2:] == [
        "wrote html report to out/rook.html", "wrote junit report to out/rook.xml"
    ], proc.stderr
    assert "wrote" not in proc.stdout and "3 passed" in proc.stdout
    proc = subprocess.run([*ROOK, "run", "--json", "--report", "markdown:out/rook.md"],
                          cwd=ws, capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout)["summary"]["passed"] == 3
    assert "wrote markdown report to out/rook.md\n" in proc.stderr, proc.stderr
    for argv in (["run", "-q", "--shard", "1/1", "--run-name", "ci-1"],
                 ["merge", "--run", "ci-1", "--report", "json:out/merged.json"]):
        proc = subprocess.run([*ROOK, *argv], cwd=ws, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert "wrote json report to out/merged.json\n" in proc.stderr, proc.stderr
    assert (ws / "out/merged.json").is_file()


def test_a_json_document_in_an_encoding_without_a_character_stays_json(example):
    """In an encoding that lacks a character (``PYTHONIOENCODING=latin-1``) a
    ``--json`` document that held one (a profile named ``Rocket 🚀 desk — ok``)
    showed it as Python's ``\\U0001f680``, which no JSON parser reads. Such a
    character is written as JSON's own escape (``\\ud83d\\ude80``), so the
    document parses to the same value."""
    ws, agent = example
    profile = agent / "profiles/example.yaml"
    profile.write_text(profile.read_text().replace("name: Example order desk",
                                                   'name: "Rocket 🚀 desk — ok"'))
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    proc = subprocess.run([*ROOK, "profile", "list", "--json"], cwd=ws, capture_output=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    names = [p["name"] for p in json.loads(proc.stdout.decode("latin-1"))]
    assert names == ["Rocket 🚀 desk — ok"], names
