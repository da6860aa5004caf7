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


def snap(page, name: str, *, full_page: bool = True) -> Path:
    """A screenshot of what the user sees now (the whole page, or only the window), for people to look at
    (docs/dashboard.md)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
