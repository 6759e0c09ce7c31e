#!/usr/bin/env python
"""Screenshots of the inspector for the README: `make screenshots`.

Serves the demo transcripts from a scratch database, opens them in Debian's chromium,
heals the weather crash by typing a user turn, and saves docs/screenshots/*.png.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
DEMO = sorted(str(p) for p in (ROOT / "buffers" / "demo").glob("*.json*"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder}/demo.sqlite3"}
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
        password = secrets.token_urlsafe()
        subprocess.run(
            [
                *manage,
                "createsuperuser",
                "--noinput",
                "--username",
                "demo",
                "--email",
                "d@x.invalid",
            ],
            env={**env, "DJANGO_SUPERUSER_PASSWORD": password},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(
            [*manage, "import_transcripts", "-v0", "--owner", "demo", *DEMO], env=env, check=True
        )
        port = free_port()
        server = subprocess.Popen(
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(base, timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            shoot(base, password)
        finally:
            server.terminate()
            server.wait(10)


def shoot(base: str, password: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(base)
        page.get_by_label("Username").fill("demo")
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", name="Conversations").wait_for()
        page.screenshot(path=OUT / "list.png")
        page.get_by_role("link", name="Weather agent crashed between two parallel calls").click()
        page.screenshot(path=OUT / "crashed.png", full_page=True)
        page.get_by_label("Your turn").fill("Are you still there?")
        page.get_by_role("button", name="Send user turn").click()
        page.locator("#m-3.just-inserted").wait_for()
        page.evaluate("document.querySelector('.composer').style.position = 'static'")
        page.screenshot(path=OUT / "healed.png", full_page=True)
        browser.close()
    print(
        f"saved {', '.join(p.name for p in sorted(OUT.glob('*.png')))} in {OUT.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
