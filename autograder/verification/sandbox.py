"""The sandbox that student code runs in while it is graded: Debian's bubblewrap (``bwrap``), the sandbox Flatpak uses.

Student code runs in two places during grading: nbgrader's kernel and the sealed verification's runner. Both are
started through this file, as a program:

    python -I autograder/verification/sandbox.py SETTINGS -- COMMAND ...

It reads SETTINGS (a JSON file the grading job wrote), then replaces itself with bwrap running COMMAND, so that
the process the grader started, signals and kills it as before is the sandbox itself. Inside, the code sees:

- read-only: the system's /usr, the Python installation and the course's environment, the course's helper
  package (less the folders SETTINGS hides), and whatever else it lists (the sealed run's student program).
  Nothing else of the machine exists there: no class folder, no gradebook, no source notebooks, no other
  submission, no solutions;
- read-write: a private temporary folder of limited size (its working folder and home), and the folders
  SETTINGS shares (the kernel's connection folder, which holds nothing but this kernel's sockets);
- no network (a network namespace of its own, with only its own loopback), its own process namespace (every
  process it starts dies with the job, daemons included), no capabilities, and a limit on processes.

Run as root (CI, a grading server), the code inside runs as an unprivileged user of its own: user namespaces
would map it to root, for which the kernel enforces no process limit. Run as another user, it runs as that user
in a user namespace of its own.

Only the standard library is used: this file runs as a script, outside the course's packages.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve()
BWRAP = "bwrap"
WORK = "/tmp/work"  # the code's working folder and home, inside its private temporary folder
# An unprivileged user of its own for each sandbox, when grading runs as root: far above the ids of real users
# and of the ranges that container tools hand out, and unique while the sandbox runs (it is offset by the pid).
UID_BASE = 1 << 30
# Variables the code inside may see; everything else of the grader's environment (tokens, paths) stays out.
PASSED_ENVIRONMENT = (
    "NBGRADER_EXECUTION",
    "NBGRADER_VALIDATING",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MPLBACKEND",
    "LANG",
    "LC_ALL",
    "TZ",
)
INSTALL_HINT = (
    "Grading runs student code in a bubblewrap sandbox, and none can run here. On Debian or Ubuntu: "
    "`sudo apt-get install bubblewrap`; on Fedora: `sudo dnf install bubblewrap`. It needs Linux with user "
    "namespaces enabled (or root). On macOS or Windows, grade in a Linux container or virtual machine. "
    "To grade anyway, without protection from the code you grade, pass --no-sandbox."
)


@dataclass(frozen=True)
class Sandbox:
    """What the code inside may use. Paths are folders or files of this machine, seen at the same place inside."""

    readable: tuple[str, ...] = ()  # besides the system, Python and the course's package
    shared: tuple[str, ...] = ()  # read-write folders shared with the grader
    hidden: tuple[str, ...] = ()  # folders inside what is readable that the code must not see: empty there
    revealed: tuple[str, ...] = ()  # files inside hidden folders that it may see after all
    processes: int = 256  # threads count too: a kernel that has used PyTorch on 2 threads runs 14
    disk: int = 512 * 2**20  # bytes of the private temporary folder, which lives in memory
    # Bytes each process may write to (RLIMIT_DATA): an allocation past it fails in the student's cell instead of
    # taking the machine's memory. Not RLIMIT_AS: torch reserves far more address space than it uses (notebook 07
    # runs in 512 MiB of data and needs about 1.5 GiB of address space); notebook 07 needs about 350 MiB.
    memory: int = 2 * 2**30

    def launcher(self, settings: Path) -> list[str]:
        """The command that starts a program in this sandbox: append ``--`` and the program's command."""
        settings.write_text(json.dumps(asdict(self)), encoding="utf-8")
        return [sys.executable, "-I", str(SCRIPT), str(settings)]

    def bwrap(self, command: list[str], uid: int | None) -> list[str]:
        """bwrap's command line for ``command``, run as ``uid`` (when root) or as the caller in a user namespace."""
        arguments = [BWRAP, *isolation(uid), *system_mounts()]
        # The private /tmp first: a course or a job folder that lives under the machine's /tmp is bound onto it.
        arguments += ["--perms", "1777", "--size", str(self.disk), "--tmpfs", "/tmp", "--perms", "0777", "--dir", WORK]
        readable = [*course_paths(), *self.readable]
        arguments += parent_folders(readable) + [item for path in readable for item in ("--ro-bind", path, path)]
        for path in self.hidden:  # after the binds they lie in, so that they cover them
            arguments += ["--tmpfs", path]
        arguments += [item for path in self.revealed for item in ("--ro-bind", path, path)]
        arguments += parent_folders(self.shared) + [item for path in self.shared for item in ("--bind", path, path)]
        arguments += ["--chdir", WORK, "--clearenv", *environment()]
        return [
            *arguments,
            "--",
            *drop_privileges(uid),
            "prlimit",
            f"--nproc={self.processes}",
            f"--data={self.memory}",
            "--",
            *command,
        ]


def isolation(uid: int | None) -> list[str]:
    """New namespaces for everything but the file system's contents, and death with the grader."""
    namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if uid is None:  # not root: a user namespace of its own, as the caller, with no capabilities
        namespaces += ["--unshare-user", "--cap-drop", "ALL"]
    return [*namespaces, "--die-with-parent", "--hostname", "sandbox"]


def drop_privileges(uid: int | None) -> list[str]:
    """As root, become an unprivileged user with no capabilities before the code runs (util-linux's setpriv)."""
    if uid is None:
        return []
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def system_mounts() -> list[str]:
    """The system's programs and libraries, read-only, and fresh /dev and /proc; none of /etc but name tables."""
    mounts = ["--ro-bind", "/usr", "/usr", "--dev", "/dev", "--proc", "/proc"]
    for link in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / link
        if path.is_symlink():
            mounts += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            mounts += ["--ro-bind", str(path), str(path)]
    mounts += ["--perms", "0755", "--dir", "/etc"]  # bwrap would make it root's alone, unreadable to the code
    for name in ("ld.so.cache", "localtime", "passwd", "group", "nsswitch.conf", "fonts"):
        mounts += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return mounts


def parent_folders(paths: list[str]) -> list[str]:
    """Folders leading to the bound paths, open to the code inside (bwrap would make them root's alone)."""
    mounted = {Path("/"), Path("/tmp")}
    parents = sorted({str(parent) for path in paths for parent in Path(path).parents if parent not in mounted})
    return [item for parent in parents for item in ("--perms", "0755", "--dir", parent)]


def course_paths() -> list[str]:
    """The Python installation, this environment and the folders of the course's helper package (its editable
    install maps the package to folders of the repository; those folders alone are shown, not the repository).
    Each is shown where it lies and, where a symbolic link leads to it (a .venv that is a link), where the link is
    too: the grader starts the kernel by the path it knows, the link's."""
    paths = {sys.base_prefix, sys.prefix, *package_folders()}
    return sorted({str(Path(path).resolve()) for path in paths} | {os.path.abspath(path) for path in paths})


def package_folders() -> list[str]:
    import importlib.util

    folders = []
    for name in ("transformer_course", "transformer_course.data"):
        spec = importlib.util.find_spec(name)
        folders += list(spec.submodule_search_locations or []) if spec else []
    return folders


def environment() -> list[str]:
    """bwrap's options for the code's environment: a home, a temporary folder, a PATH, and the passed variables."""
    variables = {"HOME": WORK, "TMPDIR": "/tmp", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    variables |= {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}
    return [item for name, value in variables.items() for item in ("--setenv", name, value)]


def sandbox_uid() -> int | None:
    """The user the code runs as: one of its own when this process is root, else the caller (None)."""
    return UID_BASE + os.getpid() if os.geteuid() == 0 else None


def unavailable() -> str | None:
    """Why no sandbox can run here, or None when one can (checked by running one)."""
    if sys.platform != "linux":
        return f"bubblewrap runs only on Linux; this is {sys.platform}. {INSTALL_HINT}"
    if shutil.which(BWRAP) is None:
        return f"bubblewrap (bwrap) is not installed. {INSTALL_HINT}"
    # The very interpreter the grading jobs start, by the same path: a set-up where it cannot start refuses here.
    problem = probe([sys.executable, "-c", "pass"])
    if problem is None:
        return None
    if probe(["true"]) is None:
        return (
            f"bubblewrap runs, but this Python ({sys.executable}) cannot start in its sandbox: {problem}. The sandbox "
            "shows the Python installation, the course's environment and its package, by their paths and the links "
            "that lead to them; a Python that needs other folders cannot grade here."
        )
    return f"a test sandbox failed: {problem}. {INSTALL_HINT}"


def probe(command: list[str]) -> str | None:
    """Why ``command`` fails in a sandbox, or None when it runs."""
    try:
        result = subprocess.run(Sandbox().bwrap(command, sandbox_uid()), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"it did not run ({error})"
    return None if result.returncode == 0 else result.stderr.strip() or f"exit {result.returncode}"


def give_to(uid: int | None, folders: tuple[str, ...]) -> None:
    """Let the sandbox's own user write in the shared folders and read what is in them (the connection file)."""
    if uid is None:
        return
    for folder in map(Path, folders):
        for path in [folder, *folder.iterdir()]:
            os.chown(path, uid, uid)


def main(arguments: list[str]) -> None:
    """Start ``COMMAND`` in the sandbox that SETTINGS describes: ``SETTINGS -- COMMAND ...``."""
    settings, separator, *command = arguments
    if separator != "--" or not command:
        sys.exit(f"usage: python -I {SCRIPT.name} SETTINGS -- COMMAND ...")
    sandbox = Sandbox(**{key: tuple(value) if isinstance(value, list) else value for key, value in load(settings)})
    uid = sandbox_uid()
    give_to(uid, sandbox.shared)
    # An interrupt is meant for the code inside (a cell that runs too long); bwrap itself would die of it and take
    # the sandbox with it. The kernel and the sealed run's student process set their own handler for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.execvp(BWRAP, sandbox.bwrap(command, uid))


def load(settings: str) -> list[tuple]:
    return list(json.loads(Path(settings).read_text(encoding="utf-8")).items())


if __name__ == "__main__":
    main(sys.argv[1:])
