"""The HTML replay: one self-contained file (frames as PNG inside it, the player inline) that plays an episode
with play, pause, a scrubber and speed, offline, in a browser or in a notebook's output cell
(`IPython.display.HTML(path.read_text())`). `python -m jaxrl.eval RUN render=html` writes it beside replay.gif.
"""

from __future__ import annotations

import base64
import html
import io
import json
import secrets
from importlib import resources
from pathlib import Path

import numpy as np

from jaxrl.envs.render import GIF_PIXELS


def png(frame: np.ndarray) -> str:
    """A (H, W, 3) uint8 frame as base64 PNG (lossless: the page draws the pixels the env drew)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.asarray(frame, np.uint8)).save(buffer, format="PNG", optimize=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def replay_html(frames: np.ndarray, captions: list[str], fps: int = 10, title: str = "jaxrl replay") -> str:
    """The page: frames (T, H, W, 3) uint8 at one pixel a picture pixel, drawn scaled to about GIF_PIXELS."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or len(frames) != len(captions):
        raise ValueError(f"frames must be (T, H, W, 3) with one caption each; got {frames.shape}, {len(captions)}")
    ident = "jaxrl-replay-" + secrets.token_hex(4)  # several replays in one notebook keep apart
    data = {
        "fps": int(fps),
        "width": int(frames.shape[2]),
        "height": int(frames.shape[1]),
        "pixels": GIF_PIXELS,
        "frames": [png(f) for f in frames],
        "captions": list(captions),
    }
    script = resources.files("jaxrl.web").joinpath("replay.js").read_text()
    style = resources.files("jaxrl.web").joinpath("replay.css").read_text()
    payload = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the data
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{style}</style></head><body>\n"
        f"<div class='jaxrl-replay' id='{ident}'><div class='title'>{html.escape(title)}</div>"
        "<canvas></canvas><div class='caption'></div><div class='controls'>"
        "<button class='play' type='button'>play</button>"
        "<input class='scrub' type='range' min='0' value='0' aria-label='frame'>"
        "<span class='frame'></span> <label>speed <select class='speed'></select></label></div></div>\n"
        f"<script type='application/json' id='{ident}-data'>{payload}</script>\n"
        f"<script>{script}\njaxrlReplay('{ident}');</script>\n</body></html>\n"
    )


def write_html(frames: np.ndarray, captions: list[str], path: Path, fps: int = 10, title: str = "jaxrl replay") -> Path:
    """The HTML replay at `path`, written whole or not at all."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(replay_html(frames, captions, fps, title))
    tmp.replace(path)
    return path
