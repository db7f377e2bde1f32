"""What is done with a trained agent: evaluate it and replay its episodes (`evaluation`, `episodes`,
`html_replay`), meet other agents and the env's bots head to head and rate them (`headtohead`, `rating`), run it
as the bots of a new training run (`frozen`), ship it on the shelf (`shelf`), and carry a run to this jaxrl's
format (`upgrade`). Every env is reached through the env contract (envs/base.py), never by its name."""
