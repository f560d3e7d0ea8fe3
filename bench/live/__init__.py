"""Workload 7's live-server kit: the product's own daphne on a benchmark database, clients
with a real reviewer session, and a websocket listener in a process of its own.

The realtime workloads (`bench/workloads/realtime_*.py`) have no LangGraph counterpart:
they measure the review inbox end to end, over loopback, as a browser would reach it.
"""
