"""Chromium for the tests that use it: its flags, and whether a test may skip it."""

import os

import pytest

import course

# Headless without a sandbox (root in containers), and quiet on a closed network: without the last four
# Chromium keeps trying to reach Google's services.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip only on the documented opt-out, never in CI; fail when Chromium is missing."""
    if os.environ.get(course.SKIP_BROWSER) == "1":
        if os.environ.get("CI"):
            pytest.fail(f"{course.SKIP_BROWSER}=1 is set in CI, where the browser test must run.")
        pytest.skip(
            f"!! BROWSER TEST SKIPPED because {course.SKIP_BROWSER}=1: JupyterLab, nbgrader's extension and the "
            "notebooks were NOT tried in a browser on this machine (see the README)."
        )
    if not course.CHROMIUM.exists():
        pytest.fail(
            f"Chromium is missing ({course.CHROMIUM}); `python3.11 course.py check` installs it with apt-get as root "
            f"or with passwordless sudo. Otherwise run `sudo apt-get install {' '.join(course.CHROMIUM_PACKAGES)}`, "
            f"or, where apt is not available, skip this test with {course.SKIP_BROWSER}=1 (see the README)."
        )
