"""Snake in numpy with gymnasium's API and the rules of `envs.snake`: the CPU env the seed guides train on.

Used only by the side-by-side benchmarks (Stable-Baselines3 needs a Python env); the dynamics
match ours: same actions, observation channels, rewards, hunger and step limits.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np

MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # 0 up, 1 right, 2 down, 3 left


class NumpySnake(gym.Env):
    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, size: int = 10, hunger_limit: int | None = None, max_steps: int | None = None):
        self.size = size
        self.hunger_limit = hunger_limit or size * size
        self.max_steps = max_steps or 100 * size * size
        self.observation_space = gym.spaces.Box(0, 1, (size, size, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(4)

    def _spawn(self) -> None:
        free = np.flatnonzero(~self.occupied.ravel())
        self.apple = divmod(int(self.np_random.choice(free)), self.size) if free.size else None

    def _obs(self) -> np.ndarray:
        obs = np.zeros((self.size, self.size, 3), np.uint8)
        for r, c in self.body[1:]:
            obs[r, c, 1] = 1
        obs[self.body[0][0], self.body[0][1], 0] = 1
        if self.apple is not None:
            obs[self.apple[0], self.apple[1], 2] = 1
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.direction = int(self.np_random.integers(4))
        dr, dc = MOVES[self.direction]
        while True:  # straight snake of 3 on the board, the cell ahead on the board too
            r, c = (int(x) for x in self.np_random.integers(0, self.size, 2))
            cells = [(r - k * dr, c - k * dc) for k in range(3)]
            ahead = (r + dr, c + dc)
            if all(0 <= a < self.size and 0 <= b < self.size for a, b in [*cells, ahead]):
                break
        self.body = cells  # head first
        self.occupied = np.zeros((self.size, self.size), bool)
        for a, b in cells:
            self.occupied[a, b] = True
        self.hunger = self.time = self.score = 0
        self._spawn()
        return self._obs(), {}

    def step(self, action):
        action = int(action)
        if action != (self.direction + 2) % 4:
            self.direction = action
        dr, dc = MOVES[self.direction]
        head = (self.body[0][0] + dr, self.body[0][1] + dc)
        self.time += 1
        self.hunger += 1
        if not (0 <= head[0] < self.size and 0 <= head[1] < self.size):
            return self._obs(), -1.0, True, False, {"score": self.score}
        eats = head == self.apple
        if not eats:
            tail = self.body.pop()
            self.occupied[tail] = False
        if self.occupied[head]:
            return self._obs(), -1.0, True, False, {"score": self.score}
        self.body.insert(0, head)
        self.occupied[head] = True
        reward = 0.0
        if eats:
            self.score += 1
            self.hunger = 0
            self._spawn()
            reward = 1.0
            if self.apple is None:  # full board: a win
                return self._obs(), reward, True, False, {"score": self.score}
        truncated = self.hunger >= self.hunger_limit or self.time >= self.max_steps
        return self._obs(), reward, False, truncated, {"score": self.score}
