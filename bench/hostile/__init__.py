"""Hostile tests on demand: faults, crashes, soak and fan-out (`python -m bench.hostile`)."""
