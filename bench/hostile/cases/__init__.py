"""The on-demand hostile cases, one module each (`cNN_<name>.py`, see `bench.hostile.case`)."""
