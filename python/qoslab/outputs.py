"""Every file qoslab writes goes through here: checked before the work,
written atomically, never replacing or deleting anything the user did not
name as that output.

The rules (issue 15), and how they are kept:

* **Checked before the run.** :func:`check_file` and :func:`check_dir` are
  called by every command before any work: the path is a non-empty name, its
  parent exists and is a writable directory, it is not a directory (for a
  file), and it is not one of the command's inputs (compared with
  ``os.path.samefile`` when both exist and with ``realpath`` otherwise). The
  message names the option and the path.
* **Atomic.** Each file is written to a temporary file beside its target and
  renamed over it. Several files that belong together (a ``--out``
  directory; ``reproduce --markdown`` and its figures) are all written to
  temporaries first and only then renamed, one after another, with SIGINT
  held off for that short burst: an error or Ctrl-C leaves every previous
  file as it was. (Only SIGKILL during the burst of renames — microseconds —
  can leave a mix of old and new whole files.)
* **Temporaries are recognisably ours.** They are named
  ``.NAME.qoslab-tmp-PID-XXXXXXXX`` in the target's own directory. A later
  write into that directory removes those whose process is gone, so a run
  killed with SIGKILL leaves nothing a rerun does not clean up.
* **Symlinks are written through.** ``--output link.csv`` where ``link.csv``
  is a symlink replaces the link's target (atomically, in the target's
  directory) and keeps the link, as a shell's ``>`` would; a dangling link
  creates its target.
* **A ``--out`` directory keeps the user's other files.** We write our files
  into it one by one (never replacing the directory), and record their names
  in ``.qoslab-outputs``; a rerun deletes only the files that list names and
  it does not write again. A non-empty directory without that marker is
  refused — unless it is an output of an older qoslab (it holds
  ``results.json``), whose files we recognise by name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

__all__ = [
    "MARKER",
    "check_dir",
    "check_file",
    "commit",
    "replacing",
    "write_dir",
]

#: The output path meaning standard output (``--output -``, ``--report -``).
STDOUT = "-"

#: The file naming what qoslab owns in a ``--out`` directory.
MARKER = ".qoslab-outputs"
TMP_TAG = ".qoslab-tmp-"
_TMP_RE = re.compile(r"^\..*\.qoslab-tmp-(\d+)-[0-9a-f]{8}$")
#: Names an output directory of a qoslab from before the marker file held.
_LEGACY_NAME = re.compile(r"^(results\.json|scenario\.toml|[a-z_]+\.(csv|parquet))$")

#: ``write(f)`` fills the open file ``f`` (``...``: a lambda may bind more
#: arguments by default, ``lambda f, df=df: ...``).
Writer = Callable[..., Any]


def _err(code: int, option: str, what: str, path: str | os.PathLike[str]) -> OSError:
    """An output path refused: ``OSError(code)`` is the matching subclass
    (``FileExistsError``, ``NotADirectoryError``...), ``filename`` the path
    and ``strerror`` why, naming the option."""
    return OSError(code, f"{option}: {what}" if option else what, os.fspath(path))


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _resolve(path: Path) -> Path:
    """The file a write to ``path`` lands in: a symlink's target (followed
    through chains; a dangling link's target is created)."""
    seen = 0
    p = path
    while p.is_symlink():
        seen += 1
        if seen > 40:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", str(path))
        link = Path(os.readlink(p))
        p = link if link.is_absolute() else p.parent / link
    return p


def _special(path: Path) -> bool:
    """A FIFO, terminal, device or ``/dev/stdout``: written in place (it
    cannot be replaced by a rename, and nothing is lost by writing it)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


def _parent(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _check_parent(path: Path, option: str, create: bool = False) -> None:
    parent = _parent(path)
    if not parent.exists():
        if create:
            return  # created when written (mkdir -p), checked up to an existing ancestor
        raise _err(errno.ENOENT, option, f"the directory '{parent}' does not exist", path)
    if not parent.is_dir():
        raise _err(errno.ENOTDIR, option, f"'{parent}' is not a directory", path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _err(errno.EACCES, option, f"the directory '{parent}' is not writable", path)


def _check_name(path: str | os.PathLike[str], option: str) -> Path:
    text = os.fspath(path)
    if not text:
        raise _err(errno.ENOENT, option, "an empty path", "''")
    try:
        os.fsencode(text)
    except UnicodeError:
        raise _err(errno.EINVAL, option, "the name cannot be encoded", repr(text)) from None
    return Path(text)


def _check_not_input(path: Path, option: str, inputs: Iterable[Any]) -> None:
    for inp in inputs:
        if inp is None or not isinstance(inp, (str, os.PathLike)) or not os.fspath(inp):
            continue
        if _same(path, Path(os.fspath(inp))):
            raise _err(
                errno.EEXIST,
                option,
                f"is the input '{os.fspath(inp)}'; refusing to overwrite it",
                path,
            )


def check_file(
    path: str | os.PathLike[str],
    option: str = "",
    inputs: Iterable[Any] = (),
    parent_made_by: str | os.PathLike[str] | None = None,
) -> Path:
    """Refuses, before any work, an output file that could not be written or
    is one of ``inputs``; returns the path a write will replace (a symlink's
    target). ``parent_made_by`` is an output directory this command creates
    (``--out``), so the parent need not exist yet."""
    p = _check_name(path, option)
    if os.fspath(path) == STDOUT:
        return p
    if _special(p):
        _check_not_input(p, option, inputs)
        return p
    target = _resolve(p)
    if target.is_dir():
        raise _err(errno.EISDIR, option, "is a directory (a file is needed)", p)
    _check_not_input(target, option, inputs)
    made = parent_made_by is not None and _same(_parent(target), Path(parent_made_by))
    if not made:
        _check_parent(target, option)
    return target


def check_dir(
    path: str | os.PathLike[str], option: str = "--out", inputs: Iterable[Any] = ()
) -> Path:
    """Refuses, before any work, an output directory that is a file, is not
    writable, is an input, or is a non-empty directory qoslab does not own."""
    p = _check_name(path, option)
    _check_not_input(p, option, inputs)
    for inp in inputs:  # an input inside the directory could be deleted as stale
        if isinstance(inp, (str, os.PathLike)) and os.fspath(inp) and p.is_dir():
            ip = Path(os.fspath(inp))
            if ip.exists() and _same(_parent(ip), p) and ip.name in _owned(p):
                raise _err(
                    errno.EEXIST, option, f"holds the input '{os.fspath(inp)}' as an output", p
                )
    if p.exists():
        if not p.is_dir():
            raise _err(errno.ENOTDIR, option, "exists and is not a directory", p)
        if not os.access(p, os.W_OK | os.X_OK):
            raise _err(errno.EACCES, option, "is not writable", p)
        if not _ours(p):
            raise _err(
                errno.EEXIST,
                option,
                "is a non-empty directory that is not a qoslab output "
                f"(no {MARKER}); choose another directory or empty it",
                p,
            )
    else:
        anc = _parent(p)
        while not anc.exists() and anc != _parent(anc):
            anc = _parent(anc)
        if anc.exists() and not anc.is_dir():
            raise _err(errno.ENOTDIR, option, f"'{anc}' is not a directory", p)
        if not os.access(anc, os.W_OK | os.X_OK):
            raise _err(errno.EACCES, option, f"the directory '{anc}' is not writable", p)
    return p


def _ours(d: Path) -> bool:
    names = [e.name for e in d.iterdir()]
    if not names or MARKER in names or "results.json" in names:
        return True
    return all(_TMP_RE.match(n) for n in names)  # only what a killed run left


def _owned(d: Path) -> set[str]:
    """The names qoslab wrote in ``d`` (the marker's list; for an output of
    an older qoslab, the names it used)."""
    marker = d / MARKER
    try:
        lines = marker.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        if (d / "results.json").exists():
            return {e.name for e in d.iterdir() if _LEGACY_NAME.match(e.name)}
        return set()
    except OSError:
        return set()
    return {ln for ln in lines if ln and not ln.startswith("#") and "/" not in ln}


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(directory: Path) -> None:
    """Removes temporaries a killed qoslab left in ``directory``."""
    with contextlib.suppress(OSError):
        for e in directory.iterdir():
            m = _TMP_RE.match(e.name)
            if m and not _alive(int(m.group(1))):
                if e.is_dir() and not e.is_symlink():
                    import shutil  # here: `qoslab run` without outputs never needs it

                    shutil.rmtree(e, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        e.unlink()


def _tmp_name(target: Path) -> Path:
    return _parent(target) / f".{target.name}{TMP_TAG}{os.getpid()}-{os.urandom(4).hex()}"


def _mode(binary: bool) -> dict[str, Any]:
    return {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8", "newline": ""}


def _stage(target: Path, write: Writer, binary: bool) -> Path:
    """Writes a temporary beside ``target`` with ``write(f)``; returns it."""
    tmp = _tmp_name(target)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as e:
        # Report the file the user named, not our temporary name.
        raise OSError(e.errno, e.strerror, str(target)) from None
    try:
        with os.fdopen(fd, **_mode(binary)) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is not None and str(tmp) in str(e.filename):
            raise OSError(e.errno, e.strerror, str(target)) from None
        raise
    return tmp


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """Holds SIGINT off (it is delivered afterwards) for a burst of renames."""
    main = threading.current_thread() is threading.main_thread()
    if not main or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def commit(files: Mapping[Path, tuple[Writer, bool]], order_last: Path | None = None) -> None:
    """Writes several files as one unit: every temporary first, then the
    renames (``order_last`` last, e.g. the document that links the others).
    ``files`` maps each resolved target to ``(write, binary)``."""
    for d in {_parent(t) for t in files}:
        clean_stale(d)
    staged: dict[Path, Path] = {}
    try:
        for target, (write, binary) in files.items():
            staged[target] = _stage(target, write, binary)
        order = [t for t in staged if t != order_last]
        if order_last is not None and order_last in staged:
            order.append(order_last)
        with _no_sigint():
            for t in order:
                os.replace(staged.pop(t), t)
    finally:
        for tmp in staged.values():
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str], binary: bool = False) -> Iterator[IO[Any]]:
    """``with replacing(path) as f: ...`` writes ``path`` (a symlink: its
    target) through a temporary in the same directory, renamed into place
    when the block ends; on any error the previous file stays untouched.
    ``-`` (:data:`STDOUT`) writes to standard output, as Unix tools do."""
    if os.fspath(path) == STDOUT:
        import sys

        sys.stdout.flush()
        yield sys.stdout.buffer if binary else sys.stdout
        (sys.stdout.buffer if binary else sys.stdout).flush()
        return
    if _special(Path(path)):
        with open(path, **_mode(binary)) as f:
            yield f
        return
    target = _resolve(_check_name(path, ""))
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    clean_stale(_parent(target))
    tmp = _tmp_name(target)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    try:
        with os.fdopen(fd, **_mode(binary)) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _listing(names: Iterable[str]) -> str:
    return "".join(
        [
            "# Files qoslab wrote here; a rerun into this directory replaces or\n",
            "# deletes these, and only these.\n",
            *(f"{n}\n" for n in sorted(names)),
        ]
    )


def write_dir(out_dir: str | os.PathLike[str], files: Mapping[str, tuple[Writer, bool]]) -> Path:
    """Writes ``files`` (name → (write, binary)) into ``out_dir`` as one unit
    and records them in :data:`MARKER`. A new directory is built under a
    temporary name beside it and renamed into place (complete or absent);
    into an existing one, every file is written to a temporary first, then
    all are renamed (``results.json`` last), then the files an earlier run
    wrote there and this one does not are deleted — nothing else is."""
    out = check_dir(out_dir)
    names = sorted(files)
    if not out.exists():
        parent = _parent(out)
        parent.mkdir(parents=True, exist_ok=True)
        clean_stale(parent)
        tmp = _tmp_name(out)
        try:
            tmp.mkdir()
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(out)) from None
        try:
            for n in names:
                write, binary = files[n]
                mode: dict[str, Any] = (
                    {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8", "newline": ""}
                )
                with open(tmp / n, **mode) as f:
                    write(f)
            (tmp / MARKER).write_text(_listing(names), encoding="utf-8")
            os.rename(tmp, out)
        except BaseException:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out
    before = _owned(out)
    clean_stale(out)
    staged: dict[Path, Path] = {}
    last: Path | None = None
    try:
        for n in names:
            write, binary = files[n]
            staged[out / n] = _stage(out / n, write, binary)
        # The marker lists old and new names while the renames run, so a run
        # killed among them still knows everything it owns.
        union = _listing(before | set(names))
        staged[out / MARKER] = _stage(out / MARKER, lambda f: f.write(union), False)
        final = _listing(names)
        last = _stage(out / (MARKER + ".new"), lambda f: f.write(final), False)
        order = [out / MARKER, *(t for t in staged if t.name not in (MARKER, "results.json"))]
        if out / "results.json" in staged:
            order.append(out / "results.json")
        with _no_sigint():
            for t in order:
                os.replace(staged.pop(t), t)
            for stale in sorted(before - set(names)):
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    (out / stale).unlink()
            os.replace(last, out / MARKER)
            last = None
    finally:
        for t in [*staged.values(), *([last] if last else [])]:
            with contextlib.suppress(OSError):
                os.unlink(t)
    return out


def check_run_outputs(out: str | None, report: str | None, inputs: Iterable[Any]) -> str | None:
    """The ``--out DIR`` / ``--report [HTML]`` pair of run, analyze and
    emulate, checked before the work. Returns the report's path (``--report``
    alone: ``DIR/report.html`` with ``--out``, else ``report.html``) or None."""
    inputs = list(inputs)
    if out is not None:
        check_dir(out, "--out", inputs)
    if report is None:
        return None
    path = report or os.path.join(out or ".", "report.html")
    check_file(path, "--report", inputs, parent_made_by=out)
    return path
