"""Helpers of the dashboard's browser tests: signing in, and screenshots kept under .artifacts/dashboard/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / ".artifacts" / "dashboard"
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 900}


def sign_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/dashboard/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_selector("nav[aria-label=Main]")


# How long a page may take to draw its plots. Drawing 380 trials' three Plotly figures takes 3 to 5 s idle
# on a 2-core machine (most of it parsing plotly.js and drawing, not the server's 0.05 s); `make test` runs
# five test processes at once, which made 20 s too short once (CI of stop 37). A page that fails to load its
# plots says so at once, and the wait ends there with its sentence: the long bound costs only a hung page.
PLOTS_WAIT_MS = 90_000


def wait_for_plots(page, section_id: str) -> None:
    """Wait until the plots of `#section_id` are drawn (its `data-ready`), or its status line says they could
    not be loaded; fail with that line in the latter case."""
    page.wait_for_function(
        """id => {
            const section = document.getElementById(id);
            const state = section && section.querySelector("[role=status]");
            return section && (section.dataset.ready === "true"
                || (state && state.textContent.includes("could not be loaded")));
        }""",
        arg=section_id,
        timeout=PLOTS_WAIT_MS,
    )
    ready = page.get_attribute(f"#{section_id}", "data-ready")
    assert ready == "true", page.inner_text(f"#{section_id} [role=status]")


def snap(page, name: str, *, full_page: bool = True) -> Path:
    """A screenshot of what the user sees now (the whole page, or only the window), for people to look at
    (docs/dashboard.md)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
