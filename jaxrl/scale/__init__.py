"""Spreading a run: devices and env groups (`mesh`) and several hosts (`distributed`). A sweep of settings
trained as one program is part of the config (`jaxrl.config.sweep`)."""
