"""The demo operations assistant: an agent with reviewed tools over an in-memory back office."""
