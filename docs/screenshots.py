"""The screenshots of docs/play.md: `python docs/screenshots.py` (needs the [play] and [browser] extras and
Debian's chromium). Watching the shelf's Snake agent, and a person playing the arena against its self-play agent."""

import shutil
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from jaxrl.play import serve

OUT = Path(__file__).resolve().parent / "img"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync"]


ARROWS = ("ArrowUp", "ArrowRight", "ArrowDown", "ArrowLeft")


def greedy_move(served) -> int:
    """The direction the arena's greedy bot would take in the person's seat (0 up .. 3 left)."""
    import jax
    import jax.numpy as jnp

    (session,) = served.server.sessions.values()
    game = session.game
    rules, state = game.mode.env, game.state
    return int(rules.bot_directions(jax.random.key(game.t), state.replace(greedy=jnp.ones_like(state.alive)))[0])


def shoot(target: str, path: Path, person: bool, steps: int, seed: int = 0) -> None:
    served = serve(target, block=False, quiet=True, fps=6, seed=seed, games=Path("/tmp/jaxrl-screenshots"))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            page = browser.new_page(viewport={"width": 1080, "height": 600})
            page.goto(served.url)
            page.wait_for_function("window.jaxrlPlay.frames > 0", timeout=120_000)
            if person:  # seated, on `seed`
                page.click("#play")
                page.fill("#seed", str(seed))
                page.click("#play-seed")
            page.check("#hint")
            if person:  # the person's keys: what the greedy bot would press in their seat, one step at a time
                page.keyboard.press(" ")
                time.sleep(0.5)
                for _ in range(steps):
                    page.keyboard.press(ARROWS[greedy_move(served)])
                    page.keyboard.press(".")
                    time.sleep(0.4)
            else:
                page.wait_for_function(f"window.jaxrlPlay.frame.status.step >= {steps}", timeout=120_000)
                page.keyboard.press(" ")
            time.sleep(0.5)
            page.screenshot(path=str(path))
            browser.close()
    finally:
        served.stop()


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    shoot("pretrained:snake-v1", OUT / "play-snake.png", False, 150)
    shoot("pretrained:arena-selfplay-v2", OUT / "play-arena.png", True, 14, seed=3)
    print(f"wrote {OUT}", file=sys.stderr)
