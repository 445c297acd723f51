"""Use cases of lionrun and the ports they need; imports the domain only."""
