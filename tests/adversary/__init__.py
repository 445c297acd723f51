"""Hostile work: a run's own work (or a hand) plants links, FIFOs and huge or deep files in the store."""
