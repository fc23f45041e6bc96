"""The grading sandbox, tried as a hostile student would: what the code inside can see, change, reach and leave
behind. Each test runs a few lines of Python in the sandbox, as the kernel and the sealed run are started."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from autograder import cli
from autograder.repository import REPO, SOLUTIONS
from autograder.verification.sandbox import Sandbox, unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox can run here: {unavailable()}")


def run_inside(tmp_path: Path, code: str, sandbox: Sandbox | None = None) -> subprocess.CompletedProcess:
    sandbox = sandbox or Sandbox()
    command = [*sandbox.launcher(tmp_path / "sandbox.json"), "--", sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_the_course_package_and_pytorch_work_inside(tmp_path):
    result = run_inside(tmp_path, "import torch, transformer_course.checks; print(torch.ones(2).sum().item())")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2.0"


def test_nothing_outside_the_sandbox_can_be_seen(tmp_path):
    secret = tmp_path / "class" / "gradebook.db"
    secret.parent.mkdir()
    secret.write_text("grades")
    paths = [secret, SOLUTIONS, REPO / "autograder", REPO / "tests", Path("/etc/shadow")]
    code = f"import os\nprint([os.path.exists(p) for p in {list(map(str, paths))!r}])\nprint(os.listdir({str(REPO)!r}))"
    result = run_inside(tmp_path, code)
    assert result.returncode == 0, result.stderr
    seen, in_repository = result.stdout.splitlines()
    assert seen == str([False] * len(paths))
    assert set(eval(in_repository)) <= {".venv", "src"}  # the environment and the package's folder alone


def test_what_it_may_read_is_there_even_under_the_machine_s_tmp(tmp_path):
    shown = tmp_path / "shown.txt"  # pytest's folders, like a fresh clone in CI, may live under /tmp
    shown.write_text("visible")
    result = run_inside(tmp_path, f"print(open({str(shown)!r}).read())", Sandbox(readable=(str(shown),)))
    assert result.stdout.strip() == "visible", result.stderr


def test_the_name_tables_are_readable_and_nothing_else_of_etc_is_there(tmp_path):
    result = run_inside(tmp_path, "import os\nprint(sorted(os.listdir('/etc')))")
    assert result.returncode == 0, result.stderr
    assert set(eval(result.stdout)) <= {"ld.so.cache", "localtime", "passwd", "group", "nsswitch.conf", "fonts"}


def test_the_environment_is_read_only_and_the_grader_s_variables_stay_out(tmp_path, monkeypatch):
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "secret")
    code = """
import os, sys
print(os.environ.get("INSTRUCTOR_TOKEN"))
try:
    open(os.path.join(sys.prefix, "planted.py"), "w")
except OSError as error:
    print(type(error).__name__, error.errno)
"""
    result = run_inside(tmp_path, code)
    assert result.stdout.split() == ["None", "OSError", "30"], result.stderr  # 30: read-only file system


def test_a_private_writable_folder_of_limited_size(tmp_path):
    code = """
import errno, os
with open("filler", "wb") as filler:
    try:
        while True:
            filler.write(b"x" * 2**20)
            filler.flush()
    except OSError as error:
        print(os.getcwd(), error.errno == errno.ENOSPC, os.path.getsize("filler") // 2**20)
"""
    result = run_inside(tmp_path, code, Sandbox(disk=8 * 2**20))
    assert result.stdout.split() == ["/tmp/work", "True", "8"], result.stderr


def test_no_network_not_even_the_grading_machine_s_loopback(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5)
except OSError as error:
    print(type(error).__name__)
"""
        result = run_inside(tmp_path, code)
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    assert result.stdout.strip() == "ConnectionRefusedError", result.stderr


def test_a_fork_bomb_meets_the_process_limit(tmp_path):
    code = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        children += 1
except BlockingIOError:
    print(children)
"""
    result = run_inside(tmp_path, code, Sandbox(processes=20))
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) < 20


def test_a_daemon_dies_with_its_job(tmp_path):
    marker = f"daemon-{time.time_ns()}"
    code = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{marker}"], start_new_session=True)
"""
    start = time.monotonic()
    result = run_inside(tmp_path, code)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 30  # the job did not wait for its daemon
    time.sleep(0.5)
    assert [process for process in psutil.process_iter(["cmdline"]) if marker in (process.info["cmdline"] or [])] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user, the code runs as that user in its own namespace")
def test_under_root_the_code_runs_as_an_unprivileged_user_without_capabilities(tmp_path):
    code = "import os; print(os.getuid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])"
    uid, capabilities = run_inside(tmp_path, code).stdout.split()
    assert int(uid) >= 2**30 and int(capabilities, 16) == 0


def test_class_autograde_refuses_without_a_sandbox_and_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "unavailable", lambda: "bubblewrap (bwrap) is not installed. Install it with apt.")
    (tmp_path / "nbgrader_config.py").write_text("")
    (tmp_path / "submitted" / "alice" / "01").mkdir(parents=True)
    assert cli.main(["class", "autograde", "--class-folder", str(tmp_path)]) == 2
    assert "Not grading: bubblewrap (bwrap) is not installed" in capsys.readouterr().err


def test_an_environment_reached_through_a_symbolic_link_grades(tmp_path):
    """A .venv that is a link to an environment elsewhere: the kernel is started by the link's path."""
    link = tmp_path / "venv-link"
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    code = f"""
import subprocess, sys
sys.path.insert(0, {str(REPO)!r})
from pathlib import Path
from autograder.verification.sandbox import Sandbox, unavailable
assert sys.prefix == {str(link)!r}, sys.prefix
assert unavailable() is None, unavailable()
inside = [sys.executable, "-c", "import torch, transformer_course.checks; print(torch.ones(2).sum().item())"]
launcher = Sandbox().launcher(Path({str(tmp_path)!r}) / "s.json")
result = subprocess.run([*launcher, "--", *inside], capture_output=True, text=True)
print(result.stdout.strip() or result.stderr)
"""
    result = subprocess.run([str(link / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2.0", result.stdout


def test_a_python_the_sandbox_cannot_start_is_refused_before_grading(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/nowhere/bin/python")
    assert "this Python (/nowhere/bin/python) cannot start in its sandbox" in unavailable()
