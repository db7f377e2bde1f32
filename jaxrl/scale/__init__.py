"""Spreading a run: devices and env groups (`mesh`), several hosts (`distributed`), and sweeps of
settings trained as one program (`sweep`)."""
