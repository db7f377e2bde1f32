"""Pictures of env states on the host: the replay GIF's and the Gymnasium adapter's frames."""

from __future__ import annotations

import numpy as np

GIF_PIXELS = 320  # the long side of replay frames (jaxrl's GIF, the Gymnasium adapter's rgb_array)


def upscale(frames: np.ndarray, pixels: int) -> np.ndarray:
    """(T, H, W, 3) -> (T, H*p, W*p, 3) with p chosen so the long side is about `pixels`."""
    p = max(1, pixels // max(frames.shape[1:3]))
    return frames.repeat(p, axis=1).repeat(p, axis=2)
