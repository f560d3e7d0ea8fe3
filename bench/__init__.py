"""Side-by-side benchmarks: BeamWeaver and LangGraph on the same workloads, in one run.

`python -m bench` runs the suite and prints the table; `docs/performance.md` explains the
workloads, the targets and how to read the numbers.
"""
