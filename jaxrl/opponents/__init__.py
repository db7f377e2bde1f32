"""Who the learner plays: frozen runs as bots, self-play against a pool of its past policies, head-to-head
games between runs and the ratings computed from them."""
