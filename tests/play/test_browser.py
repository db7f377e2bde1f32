"""The play page and the HTML replay in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright
(`-m browser`; .ci/run installs both). The board on the canvas is the server's state, a key moves the person's
snake, a watched game's moves are eval's greedy episode of its seed, a closed page frees its game, a malformed
message leaves the server playing, the arena seats a person beside the shelf's champion and two bots, and the
HTML replay plays to the GIF's last frame."""

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageSequence

import jaxrl
from jaxrl.play import serve
from jaxrl.play.controls import DIRECTIONS
from jaxrl.trained import episodes
from jaxrl.trained.evaluation import STRIP_PIXELS, evaluate

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "runs" / "format-3"
# Without the background-networking flags Chromium keeps dialing out, and this machine's closed network refuses it.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HEAD, BODY, APPLE = (120, 255, 120), (40, 160, 60), (230, 40, 40)  # envs/snake.py's render_rgb
WALL = (110, 110, 110)


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "the browser tier needs Debian's chromium: apt-get install -y chromium (.ci/run does it)"
    return found


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def snake_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("browser") / "dqn-snake"
    shutil.copytree(FIXTURES / "dqn-snake", run_dir)
    return run_dir


@pytest.fixture(scope="module")
def snake_server(snake_run):
    served = serve(str(snake_run), block=False, quiet=True, fps=20, games=snake_run.parent / "games")
    yield served
    served.stop()


def open_page(browser, served):
    page = browser.new_page(viewport={"width": 1100, "height": 760})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served.url)
    page.wait_for_function("window.jaxrlPlay.frames > 0", timeout=60_000)
    page.errors = errors
    return page


def pause(page) -> None:
    """Pause the game and wait until the last frame has arrived."""
    page.evaluate("window.jaxrlPlay.ws.send(JSON.stringify({type: 'pause'}))")
    page.wait_for_function("window.jaxrlPlay.running === false", timeout=10_000)
    time.sleep(0.3)  # a frame on its way when the pause arrived


def session_game(served):
    (session,) = served.server.sessions.values()
    return session.game


def canvas_board(page) -> tuple[np.ndarray, int, int]:
    """(the canvas's pixels (H, W, 3), ring, scale)."""
    data = page.evaluate(
        """() => { const c = document.getElementById('canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height);
        return {w: c.width, h: c.height, px: Array.from(d.data), g: window.jaxrlPlay.geometry}; }"""
    )
    pixels = np.asarray(data["px"], np.uint8).reshape(data["h"], data["w"], 4)[..., :3]
    return pixels, data["g"]["ring"], data["g"]["scale"]


def at_cell(pixels: np.ndarray, ring: int, scale: int, row: int, col: int) -> tuple[int, ...]:
    return tuple(int(v) for v in pixels[ring + row * scale + scale // 2, ring + col * scale + scale // 2])


def test_the_canvas_shows_the_servers_board_cell_for_cell(browser, snake_server):
    page = open_page(browser, snake_server)
    try:
        pause(page)
        game = session_game(snake_server)
        assert int(page.evaluate("document.getElementById('canvas').dataset.step")) == game.t
        pixels, ring, scale = canvas_board(page)
        state = game.state
        row, col = int(np.asarray(state.head_row)), int(np.asarray(state.head_col))
        assert at_cell(pixels, ring, scale, row, col) == HEAD
        apple = int(np.asarray(state.apple))
        assert at_cell(pixels, ring, scale, apple // 10, apple % 10) == APPLE
        assert tuple(pixels[1, 1]) == WALL and tuple(pixels[-2, ring + scale]) == WALL  # beyond the board
        board = pixels[ring : ring + 10 * scale : scale, ring : ring + 10 * scale : scale]
        assert np.array_equal(board, game.picture())  # every cell as the env draws it
        assert BODY in {tuple(v) for v in board.reshape(-1, 3).tolist()}
        assert page.errors == []
    finally:
        page.close()


def test_a_key_press_moves_the_persons_snake_as_the_server_says(browser, snake_server):
    page = open_page(browser, snake_server)
    try:
        page.keyboard.press("p")
        page.wait_for_function("window.jaxrlPlay.frame.person === true", timeout=30_000)
        pause(page)
        game = session_game(snake_server)
        heading = int(np.asarray(game.state.direction))
        turn = DIRECTIONS[(heading + 1) % 4]  # a right turn: never a reverse
        row, col = int(np.asarray(game.state.head_row)), int(np.asarray(game.state.head_col))
        step = game.t
        page.keyboard.press({"up": "ArrowUp", "right": "ArrowRight", "down": "ArrowDown", "left": "ArrowLeft"}[turn])
        page.keyboard.press(".")
        page.wait_for_function(f"Number(document.getElementById('canvas').dataset.step) === {step + 1}", timeout=10_000)
        drow, dcol = {"up": (-1, 0), "right": (0, 1), "down": (1, 0), "left": (0, -1)}[turn]
        assert int(np.asarray(game.state.direction)) == DIRECTIONS.index(turn)
        if not game.over:
            assert (int(np.asarray(game.state.head_row)), int(np.asarray(game.state.head_col))) == (
                row + drow,
                col + dcol,
            )
            pixels, ring, scale = canvas_board(page)
            assert at_cell(pixels, ring, scale, row + drow, col + dcol) == HEAD
    finally:
        page.close()


def test_a_watched_game_of_a_seed_is_evals_greedy_episode_of_that_seed(browser, snake_server, snake_run):
    seed = 12
    recorded = episodes.read(evaluate(jaxrl.load(snake_run), episodes=1, seed=seed, render="gif")["episode_file"])
    page = open_page(browser, snake_server)
    try:
        page.check("#fastest")
        page.fill("#seed", str(seed))
        page.click("#play-seed")
        page.wait_for_function(
            f"window.jaxrlPlay.frame.seed === {seed} && window.jaxrlPlay.frame.status.over", timeout=60_000
        )
        assert page.evaluate("window.jaxrlPlay.moves") == recorded.actions
    finally:
        page.close()


def test_closing_the_page_frees_its_game_within_a_second(browser, snake_server):
    page = open_page(browser, snake_server)
    assert len(snake_server.server.sessions) == 1
    page.close()
    start = time.perf_counter()
    while snake_server.server.sessions and time.perf_counter() - start < 1.0:
        time.sleep(0.02)
    assert not snake_server.server.sessions


def test_a_malformed_message_is_answered_and_the_server_plays_on(browser, snake_server):
    page = open_page(browser, snake_server)
    try:
        page.evaluate('window.jaxrlPlay.ws.send(\'{"type": "fly"}\')')
        page.wait_for_function("window.jaxrlPlay.errors.length > 0", timeout=10_000)
        assert "type 'fly' is unknown" in page.inner_text("#error")
        seen = page.evaluate("window.jaxrlPlay.frames")
        page.wait_for_function(
            f"window.jaxrlPlay.frames > {seen} || window.jaxrlPlay.frame.status.over", timeout=10_000
        )
        assert page.evaluate("window.jaxrlPlay.ws.readyState") == 1  # still open
    finally:
        page.close()


def test_a_person_plays_the_arena_against_the_shelf_champion_and_two_bots(browser, tmp_path):
    served = serve("pretrained:arena-selfplay-v2", block=False, quiet=True, fps=10, games=tmp_path)
    try:
        page = open_page(browser, served)
        page.keyboard.press("p")
        page.wait_for_function("window.jaxrlPlay.frame.person === true", timeout=30_000)
        names = [s["name"] for s in page.evaluate("window.jaxrlPlay.frame.status.seats")]
        assert names == ["you", "pretrained:arena-selfplay-v2", "greedy", "greedy"]
        readout = page.evaluate("window.jaxrlPlay.frame.readout")
        assert readout["seat"] == 1 and abs(sum(readout["numbers"]) - 1) < 1e-3  # the champion's probabilities
        assert "pretrained:arena-selfplay-v2 at seat 1" in page.inner_text("#readout")
        page.close()
    finally:
        served.stop()


def test_the_html_replay_plays_to_the_gifs_last_frame(browser, snake_run):
    result = evaluate(jaxrl.load(snake_run), episodes=4, seed=1, render="html")
    gif = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(result["replay"]))]
    page = browser.new_page()
    try:
        page.goto(Path(result["replay_html"]).as_uri())
        page.wait_for_selector(".jaxrl-replay[data-shown='0']")
        page.select_option(".speed", "0")
        page.click(".play")
        page.wait_for_function(
            f"document.querySelector('.jaxrl-replay').dataset.shown === '{len(gif) - 1}'", timeout=60_000
        )
        pixels = page.evaluate(
            """() => { const c = document.querySelector('.jaxrl-replay canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height);
            return {w: c.width, h: c.height, px: Array.from(d.data)}; }"""
        )
        canvas = np.asarray(pixels["px"], np.uint8).reshape(pixels["h"], pixels["w"], 4)[..., :3]
        board = gif[-1][:-STRIP_PIXELS]
        cells = 10
        step_gif, step_canvas = board.shape[0] // cells, canvas.shape[0] // cells
        centre = lambda image, step: image[step // 2 :: step, step // 2 :: step][:cells, :cells]
        assert np.array_equal(centre(canvas, step_canvas), centre(board, step_gif))
        caption = page.inner_text(".jaxrl-replay .caption")
        assert caption.startswith(f"step {len(gif)}/{len(gif)}")
    finally:
        page.close()


def test_the_page_draws_the_grid_and_the_open_arena(browser, tmp_path):
    for env, cells in (
        ({"name": "grid", "num_agents": 4}, (8, 8)),
        ({"name": "arena_open", "width": 64, "height": 36, "num_snakes": 8, "num_food": 64}, (36, 64)),
    ):
        served = serve(env=env, block=False, quiet=True, fps=30, games=tmp_path)
        try:
            page = open_page(browser, served)
            pause(page)
            pixels, ring, scale = canvas_board(page)
            board = pixels[ring : ring + cells[0] * scale : scale, ring : ring + cells[1] * scale : scale]
            assert np.array_equal(board, session_game(served).picture()), env["name"]
            assert json.loads(json.dumps(page.evaluate("window.jaxrlPlay.hello.env"))) == env["name"]
            page.close()
        finally:
            served.stop()
