"""The course as a learner meets it: JupyterLab started by `course.py lab`, used in headless Chromium.

The server serves a temporary copy of notebooks/ and solutions/: JupyterLab autosaves, and the outputs of
the cells run here must never reach the repository's notebooks, which other tests read at the same time.
Screenshots of each step and the server's log go to .course/browser/.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

import course
from browsers import CHROMIUM_FLAGS, require_chromium

REPO = Path(__file__).resolve().parents[2]
RECORD = course.BROWSER_RECORD
SOLUTION = "solutions/01_self_attention_averaging/01_self_attention_averaging.ipynb"
SERVER_START_SECONDS = 120
UI_TIMEOUT_MS = 60_000
# Run All imports torch in a fresh kernel; on 2 shared cores under the rest of the check that takes a while.
RUN_ALL_TIMEOUT_MS = 300_000
ERROR_OUTPUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


@dataclass
class Lab:
    url: str
    token: str

    def address(self, path: str = "") -> str:
        return f"{self.url}/{path}?token={self.token}"


def course_copy(root: Path) -> Path:
    for folder in ("notebooks", "solutions"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return root


def private_jupyter_environment(home: Path) -> dict[str, str]:
    """Jupyter's configuration, data, runtime files, settings and workspaces in a folder of this test only,
    so neither the user's own Jupyter set-up nor an earlier run changes what the test sees."""
    folders = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_DATA_DIR": home / "data",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": home / "settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / "workspaces",
    }
    # No news: JupyterLab's server would try to fetch them from the internet, and its question about them
    # covers the outputs in the screenshots.
    settings = folders["JUPYTERLAB_SETTINGS_DIR"] / "@jupyterlab/apputils-extension"
    notification = settings / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return {**os.environ, **{name: str(path) for name, path in folders.items()}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(lab: Lab) -> bool:
    try:
        with urllib.request.urlopen(lab.address("api/status"), timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def wait_until_answering(lab: Lab, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while not answers(lab):
        if server.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {server.returncode}" if server.poll() is not None else "did not answer"
            pytest.fail(f"JupyterLab {state} within {SERVER_START_SECONDS} s; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)


def shut_down_kernels(lab: Lab) -> None:
    """Ask the server to stop its kernels: they run in sessions of their own, out of reach of the server's group."""
    try:
        with urllib.request.urlopen(lab.address("api/kernels"), timeout=10) as response:
            kernels = json.load(response)
        for kernel in kernels:
            request = urllib.request.Request(lab.address(f"api/kernels/{kernel['id']}"), method="DELETE")
            urllib.request.urlopen(request, timeout=30).close()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        pass  # the server is gone already; stopping it stops its kernels too


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def stop_group(server: subprocess.Popen, grace_seconds: float = 30) -> None:
    """Stop course.py and the JupyterLab it started (one process group): politely, then for good."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    server.wait()
    deadline = time.monotonic() + grace_seconds
    while group_alive(server.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if group_alive(server.pid):
        os.killpg(server.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def record() -> Path:
    shutil.rmtree(RECORD, ignore_errors=True)
    RECORD.mkdir(parents=True)
    return RECORD


@pytest.fixture(scope="module")
def lab(tmp_path_factory, record):
    """`python3.11 course.py lab`, as the README starts it, on a loopback port with a random token."""
    require_chromium()
    home = tmp_path_factory.mktemp("jupyterlab")
    root = course_copy(home / "course")
    lab = Lab(f"http://127.0.0.1:{free_port()}", secrets.token_hex(24))
    options = ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={lab.url.rsplit(':', 1)[1]}"]
    options += ["--ServerApp.port_retries=0", f"--IdentityProvider.token={lab.token}", f"--ServerApp.root_dir={root}"]
    log = record / "jupyterlab.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [sys.executable, "course.py", "lab", *options],
            cwd=REPO,
            env=private_jupyter_environment(home),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_answering(lab, server, log)
        yield lab
    finally:
        if server.poll() is None:
            shut_down_kernels(lab)
        stop_group(server)


@pytest.fixture(scope="module")
def browser(lab):
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(course.CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser, record: Path, request, test_failed):
    """A fresh browser window; what its page reports as errors goes to a log beside the screenshots."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    with (record / f"console-{request.node.name}.log").open("w") as console:
        page.on("console", lambda message: console.write(f"{message.type}: {message.text}\n"))
        page.on("pageerror", lambda error: console.write(f"page error: {error}\n"))
        yield page
        if test_failed():
            screenshot(page, f"failed-{request.node.name}")
        context.close()


def screenshot(page: Page, name: str) -> None:
    page.screenshot(path=RECORD / f"{name}.png")


def notebook_panel(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel")


def wait_for_idle_kernel(page: Page) -> None:
    # The status bar, not the toolbar's indicator: that one also says idle before the kernel has started.
    status_bar = page.locator(".jp-StatusBar-Widget")
    expect(status_bar).to_contain_text("Python 3 (ipykernel) | Idle", timeout=RUN_ALL_TIMEOUT_MS)


def run_all_cells(page: Page) -> None:
    """Run ▸ Run All Cells, from the menu bar, as a learner does."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()


def show(output: Locator) -> None:
    """Scroll an output to the middle of the notebook, so that the screenshot shows it."""
    output.evaluate("element => element.scrollIntoView({block: 'center'})")
    expect(output).to_be_visible()


def validate_button(page: Page) -> Locator:
    return notebook_panel(page).locator(".jp-Toolbar-item").get_by_text("Validate", exact=True)


def code_cell_count(path: str) -> int:
    return sum(cell.cell_type == "code" for cell in nbformat.read(REPO / path, as_version=4).cells)


def test_nbgrader_lab_extension_is_installed_and_enabled():
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True, check=True
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    assert re.search(rf"@jupyter/nbgrader v{re.escape(version('nbgrader'))} enabled OK", plain), plain


def test_student_notebook_01_opens_and_its_first_check_says_softmax_is_not_implemented(lab: Lab, page: Page):
    page.goto(lab.address())  # where `course.py lab` sends the learner's browser
    expect(page).to_have_url(re.compile(re.escape(course.FIRST_NOTEBOOK)))
    wait_for_idle_kernel(page)
    expect(validate_button(page)).to_be_visible()  # nbgrader's extension runs in the page
    screenshot(page, "1-student-notebook-01-opened")
    run_all_cells(page)
    errors = notebook_panel(page).locator(ERROR_OUTPUT)
    expect(errors.first).to_contain_text("softmax is not implemented yet", timeout=RUN_ALL_TIMEOUT_MS)
    wait_for_idle_kernel(page)
    # Run All stops at the first error: every cell before the first exercise's visible check ran cleanly.
    expect(errors).to_have_count(1)
    expect(errors).to_contain_text("NotImplementedYet: softmax is not implemented yet")
    expect(errors).not_to_contain_text("transformer_course")  # the message alone: no frame of the course's package
    failing_cell = notebook_panel(page).locator(".jp-CodeCell", has=page.locator(ERROR_OUTPUT))
    expect(failing_cell).to_contain_text("nb01.check_softmax(softmax)")
    show(errors)
    screenshot(page, "2-student-notebook-01-softmax-check-fails")


def test_solution_notebook_01_runs_without_error_and_passes_nbgrader_validate(lab: Lab, page: Page):
    page.goto(lab.address(f"lab/workspaces/solution/tree/{SOLUTION}"))  # a workspace of its own: one notebook
    wait_for_idle_kernel(page)
    run_all_cells(page)
    numbered = notebook_panel(page).locator(".jp-CodeCell .jp-InputPrompt", has_text=re.compile(r"\[\d+\]"))
    # Run All stops at an error, so every code cell numbered means none raised.
    expect(numbered).to_have_count(code_cell_count(SOLUTION), timeout=RUN_ALL_TIMEOUT_MS)
    wait_for_idle_kernel(page)
    expect(notebook_panel(page).locator(ERROR_OUTPUT, has_text="Traceback")).to_have_count(0)
    show(numbered.last)
    screenshot(page, "3-solution-notebook-01-ran-without-error")
    validate_button(page).click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Success! Your notebook passes all the tests.", timeout=RUN_ALL_TIMEOUT_MS)
    screenshot(page, "4-solution-notebook-01-nbgrader-validate-succeeds")
