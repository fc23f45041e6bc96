"""A class on a real JupyterHub, as docs/teaching.md sets it up: the hub and its proxy, a local spawner that runs
each server as its user, real Linux accounts for an instructor and two students, the students' environment built
from a student release with Debian's Python, and nbgrader's exchange.

The instructor hands out notebook 01. Each student logs in through the hub in Chromium, fetches it in the Assignments
tab, saves their answers through their own server (one solves it, one hands it in as released) and submits. The
instructor collects, autogrades and releases the feedback; each student fetches theirs in the Assignments tab and
reads their own score. Every step's screenshot goes to .course/hub/.

Between accounts, each check runs as that student's process: no student reads another's home, submission or
feedback, the instructor's class folder, or the repository's solutions; a submission one student forges in the
other's name is not collected. The hub, every server and the accounts are gone when the test ends.

The class commands run as root, the hub's administrator, on a class folder in the instructor's home; the
repository is put out of the students' reach (mode 700) for the test's length, as docs/teaching.md asks.
"""

import json
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import psutil
import pytest
from playwright.sync_api import Page, sync_playwright

import course
from autograder.class_folder import ClassFolder
from autograder.grading import Limits
from autograder.repository import REPO, assignments
from autograder.samples import samples
from browsers import CHROMIUM_FLAGS, require_chromium
from cores import grading_workers

pytestmark = pytest.mark.grading

FIRST = assignments()[0]
NOTEBOOK = f"{FIRST}.ipynb"
COURSE_ID = "transformers"
INSTRUCTOR = "hubteacher"
SOLVES, HANDS_IN_AS_RELEASED = "hubalice", "hubbob"
STUDENTS = (SOLVES, HANDS_IN_AS_RELEASED)
DEBIAN_PYTHON = Path("/usr/bin/python3.11")  # a Python every account can run; the course's may lie under /root
RECORD = REPO / ".course" / "hub"
UI_TIMEOUT_MS = 90_000  # a server's first start imports JupyterLab's extensions on two busy cores
CELL_TIMEOUT = 60.0
HUB_CONFIG = """\
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {pid_file!r}
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {cookie_secret!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {students!r}
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.environment = {{"PATH": {path!r}}}
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
"""
# The students' servers find the course and the exchange in their environment's own Jupyter settings.
STUDENT_NBGRADER_CONFIG = 'c.CourseDirectory.course_id = "{course_id}"\nc.Exchange.root = "{exchange}"\n'


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def require_root_accounts() -> None:
    """Creating accounts needs root: skip elsewhere, loudly, but never in CI."""
    if os.geteuid() == 0 and shutil.which("useradd") and DEBIAN_PYTHON.exists():
        return
    reason = "root, useradd and Debian's python3.11 (to create accounts and the students' environment)"
    if os.environ.get("CI"):
        pytest.fail(f"The hub test needs {reason}; CI has them.")
    pytest.skip(f"!! HUB TEST SKIPPED: it needs {reason}; the hub path was NOT tried on this machine.")


def as_user(user: str, command: str) -> subprocess.CompletedProcess:
    """``command`` in a shell of ``user``'s own: that account's rights, nothing of root's."""
    return subprocess.run(["runuser", "-u", user, "--", "sh", "-c", command], capture_output=True, text=True)


def create_account(name: str) -> Path:
    remove_account(name)  # one left over from an interrupted run
    subprocess.run(["useradd", "-m", "-K", "HOME_MODE=0700", "-s", "/bin/sh", name], check=True)
    return Path(pwd.getpwnam(name).pw_dir)


def account_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def remove_account(name: str) -> None:
    if not account_exists(name):
        return
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    subprocess.run(["userdel", "-r", "-f", name], capture_output=True)


def processes_of(names: tuple[str, ...]) -> list[psutil.Process]:
    return [process for process in psutil.process_iter(["username"]) if process.info["username"] in names]


@dataclass
class Hub:
    folder: Path  # every file of the test that the accounts may reach: environment, exchange
    class_folder: ClassFolder
    url: str
    process: subprocess.Popen
    password: str
    handed_in: dict[str, dict[str, nbformat.NotebookNode]] = field(default_factory=dict)
    feedback: dict[str, str] = field(default_factory=dict)  # student -> the feedback page they opened
    grades: dict[str, float] = field(default_factory=dict)
    max_points: float = 0.0

    def stop(self) -> None:
        """The hub stops its users' servers and its proxy as it ends (cleanup_servers, on by default)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def students_environment(folder: Path) -> Path:
    """The students' environment, as docs/teaching.md builds it: from a student release, with Debian's Python, its
    packages from the course's environment (hard links: no download)."""
    release = folder / "release"
    subprocess.run(
        [sys.executable, str(REPO / "course.py"), "class", "release-package", str(release), "--through", "01"],
        check=True,
        capture_output=True,
    )
    environment = folder / "env"
    build = [str(DEBIAN_PYTHON), str(release / "course.py"), "hub-environment", str(environment)]
    subprocess.run([*build, "--packages-from", sys.prefix], check=True, capture_output=True)
    shutil.rmtree(release)
    return environment


def start_hub(folder: Path, environment: Path, password: str) -> tuple[subprocess.Popen, str]:
    hub_folder = folder / "hub"  # root's alone: the hub's database and secret
    hub_folder.mkdir(mode=0o700)
    port = free_port()
    config = HUB_CONFIG.format(
        port=port,
        hub_port=free_port(),
        proxy_api_port=free_port(),
        proxy=str(course.HUB_PROXY),
        pid_file=str(hub_folder / "proxy.pid"),
        folder=hub_folder,
        cookie_secret=str(hub_folder / "cookie_secret"),
        password=password,
        students=set(STUDENTS),
        python=str(environment / "bin" / "python"),
        path=f"{environment / 'bin'}:/usr/bin:/bin",
    )
    (hub_folder / "jupyterhub_config.py").write_text(config, encoding="utf-8")
    log = (RECORD / "hub.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(hub_folder / "jupyterhub_config.py")],
        cwd=hub_folder,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, f"JupyterHub ended at start: see {RECORD / 'hub.log'}"
        try:
            with urllib.request.urlopen(f"{url}/hub/health", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise AssertionError(f"JupyterHub did not answer within 60 s: see {RECORD / 'hub.log'}")


def open_assignments(page: Page, student: str, step: str) -> None:
    page.get_by_role("menuitem", name="Nbgrader").click()
    page.get_by_role("menuitem", name="Assignment List").click()
    page.get_by_text(FIRST).first.wait_for(timeout=UI_TIMEOUT_MS)
    page.screenshot(path=str(RECORD / f"{student}-{step}.png"))


def log_in(page: Page, url: str, student: str, password: str) -> None:
    page.goto(f"{url}/hub/login")
    page.fill("input[name=username]", student)
    page.fill("input[name=password]", password)
    page.locator("[type=submit]").click()
    page.wait_for_url(f"**/user/{student}/lab**", timeout=UI_TIMEOUT_MS)
    page.get_by_role("menuitem", name="Nbgrader").wait_for(timeout=UI_TIMEOUT_MS)


def save_through_server(page: Page, url: str, student: str, notebook: nbformat.NotebookNode) -> None:
    """Save the notebook in the student's fetched copy through their server, as JupyterLab saves it."""
    xsrf = next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == "_xsrf")
    response = page.request.put(
        f"{url}/user/{student}/api/contents/{FIRST}/{NOTEBOOK}",
        data=json.dumps({"type": "notebook", "format": "json", "content": notebook}),
        headers={"X-XSRFToken": xsrf, "Content-Type": "application/json"},
    )
    assert response.ok, response.text()


@pytest.fixture(scope="module")
def hub():
    require_root_accounts()
    require_chromium()
    assert course.HUB_PROXY.exists(), "JupyterHub's proxy is missing: `python3.11 course.py check` installs it (npm)"
    RECORD.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="course-hub-"))
    folder.chmod(0o755)
    repo_mode = REPO.stat().st_mode & 0o777
    instructor_home = create_account(INSTRUCTOR)
    homes = {student: create_account(student) for student in STUDENTS}
    process = None
    try:
        REPO.chmod(repo_mode & 0o700)
        exchange = folder / "exchange"
        exchange.mkdir()
        exchange.chmod(0o1777)  # docs/teaching.md: like /tmp
        environment = students_environment(folder)
        config = STUDENT_NBGRADER_CONFIG.format(course_id=COURSE_ID, exchange=exchange)
        (environment / "etc" / "jupyter" / "nbgrader_config.py").write_text(config, encoding="utf-8")
        class_folder = ClassFolder.create(instructor_home / "transformers", exchange, COURSE_ID)
        class_folder.write_student_versions([FIRST])
        class_folder.hand_out(FIRST)
        password = secrets.token_urlsafe(12)
        process, url = start_hub(folder, environment, password)
        running = Hub(folder, class_folder, url, process, password)
        run_term(running)
        yield running
    finally:
        if process is not None and process.poll() is None:
            process.kill()
        REPO.chmod(repo_mode)
        for name in (INSTRUCTOR, *STUDENTS):
            remove_account(name)
        shutil.rmtree(folder, ignore_errors=True)
    # nothing of the class is left: no account, no home, no exchange
    assert not [name for name in (INSTRUCTOR, *STUDENTS) if account_exists(name)]
    assert not instructor_home.exists() and not any(home.exists() for home in homes.values()) and not folder.exists()


def run_term(hub: Hub) -> None:
    """Hand in through the browser, grade as the instructor, and read the feedback through the browser."""
    released = hub.class_folder.released(FIRST)
    solved = next(sample for sample in samples(FIRST, released) if sample.submission.student == "sample-full-marks")
    hub.handed_in = {SOLVES: solved.submission.notebooks, HANDS_IN_AS_RELEASED: released}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(course.CHROMIUM), args=CHROMIUM_FLAGS)
        pages = {student: hand_in(browser.new_context().new_page(), hub, student) for student in STUDENTS}
        forge_a_submission(hub)
        hub.class_folder.collect_from_exchange(FIRST)
        outcomes = hub.class_folder.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
        hub.grades = {outcome.student: outcome.points for outcome in outcomes}
        hub.max_points = max(outcome.max_points for outcome in outcomes)
        hub.class_folder.generate_feedback(FIRST)
        hub.class_folder.release_feedback(FIRST)
        hub.feedback = {student: read_feedback(page, hub, student) for student, page in pages.items()}
        browser.close()


def hand_in(page: Page, hub: Hub, student: str) -> Page:
    """Log in, fetch the assignment in the Assignments tab, save the answers, submit."""
    page.set_default_timeout(UI_TIMEOUT_MS)
    log_in(page, hub.url, student, hub.password)
    open_assignments(page, student, "1-released")
    page.get_by_role("button", name="Fetch").first.click()
    page.get_by_role("button", name="Submit").first.wait_for()
    save_through_server(page, hub.url, student, hub.handed_in[student][NOTEBOOK])
    page.get_by_role("button", name="Submit").first.click()
    page.locator("#submitted_assignments_list").get_by_text(FIRST).first.wait_for()
    page.screenshot(path=str(RECORD / f"{student}-2-submitted.png"))
    return page


def read_feedback(page: Page, hub: Hub, student: str) -> str:
    """Fetch the feedback in the Assignments tab and open it: the page's text."""
    page.reload()
    page.get_by_role("menuitem", name="Nbgrader").wait_for()
    open_assignments(page, student, "3-graded")
    page.get_by_role("button", name="Fetch Feedback").first.click()
    page.get_by_text("(view feedback)").first.wait_for()
    page.screenshot(path=str(RECORD / f"{student}-4-feedback-fetched.png"))
    page.goto(f"{hub.url}/user/{student}/files/{feedback_page(page, hub.url, student)}")
    page.screenshot(path=str(RECORD / f"{student}-5-feedback-page.png"), full_page=True)
    return page.inner_text("body")


def feedback_page(page: Page, url: str, student: str) -> str:
    """Where the feedback the student fetched lies in their home: FIRST/feedback/<time handed in>/FIRST.html."""
    listing = page.request.get(f"{url}/user/{student}/api/contents/{FIRST}/feedback").json()
    (handed_in,) = [entry["path"] for entry in listing["content"] if entry["type"] == "directory"]
    return f"{handed_in}/{FIRST}.html"


def forge_a_submission(hub: Hub) -> None:
    """The student who hands in the released notebook also puts one in the other's name, with a later time, where
    nbgrader's exchange keeps submissions: the inbound folder lets every account create one."""
    inbound = hub.folder / "exchange" / COURSE_ID / "inbound"
    stamp = "2099-01-01 00:00:00.000000 UTC"
    forged = f"{inbound}/{SOLVES}+{FIRST}+{stamp}+forged"
    written = subprocess.run(
        ["runuser", "-u", HANDS_IN_AS_RELEASED, "--", "sh", "-c"]
        + [f"mkdir '{forged}' && cat > '{forged}/{NOTEBOOK}' && echo '{stamp}' > '{forged}/timestamp.txt'"],
        input=nbformat.writes(hub.handed_in[HANDS_IN_AS_RELEASED][NOTEBOOK]),
        text=True,
        capture_output=True,
    )
    assert written.returncode == 0, f"the forgery could not even be put in the exchange: {written.stderr}"


def test_students_fetch_submit_and_read_their_own_score_in_the_assignments_tab(hub):
    """The grades are those that grading gives the same notebooks everywhere else: full marks for the solved one,
    none for the one handed in as released (tests/end_to_end/test_grading.py, test_grading_samples.py)."""
    assert hub.grades == {SOLVES: hub.max_points, HANDS_IN_AS_RELEASED: 0.0} and hub.max_points > 0
    for student, points in hub.grades.items():
        shown = re.search(r"Score: ([\d.]+) / ([\d.]+)", hub.feedback[student])
        assert shown, f"{student}'s feedback page shows no score"
        assert (float(shown[1]), float(shown[2])) == (points, hub.max_points)


def test_a_submission_forged_in_another_students_name_is_not_collected(hub):
    # the fixture put it in the exchange (forge_a_submission asserts so) before collecting
    assert hub.grades[SOLVES] == hub.max_points  # graded on what the student handed in, not on the forgery


@pytest.mark.parametrize("student", STUDENTS)
def test_a_students_account_reaches_nothing_of_the_others_nor_the_instructors(hub, student):
    other = next(name for name in STUDENTS if name != student)
    exchange = hub.folder / "exchange" / COURSE_ID
    out_of_reach = {
        "the other student's home": Path(pwd.getpwnam(other).pw_dir),
        "what was handed in": exchange / "inbound",
        "the feedback in the exchange": exchange / "feedback",
        "the instructor's class folder": hub.class_folder.root,
        "the gradebook": hub.class_folder.root / "gradebook.db",
        "the repository's solutions": REPO / "solutions",
    }
    for what, path in out_of_reach.items():
        listed = as_user(student, f"ls '{path}'")
        assert listed.returncode != 0, f"{student} could list {what} ({path}): {listed.stdout[:200]}"
        read = as_user(student, f"find '{path}' -type f -exec cat {{}} + | head -c 1")
        assert not read.stdout, f"{student} could read {what} ({path})"


def test_the_hub_and_every_server_stop_when_it_ends(hub):
    servers = processes_of(STUDENTS)
    assert servers, "no student's server ran as that student"
    hub.stop()
    psutil.wait_procs(servers, timeout=30)
    assert not processes_of(STUDENTS)
    assert not (hub.folder / "hub" / "proxy.pid").exists()
