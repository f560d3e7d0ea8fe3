"""The LangGraph Platform protocol under `/lg`, served by the durable runtime
(`docs/protocol.md`): assistants, threads, state, runs and SSE streams for the official
`langgraph-sdk` and `@langchain/langgraph-sdk` clients.

The views live in `*_views.py`, the shapes in `representations`, `values`, `messages` and
`shapes`, the streams in `stream`, `thread_stream` and `translate`, the routes (and the
OpenAPI document built from them) in `routes` and `openapi`. The package has no public
Python API: it is used over HTTP.
"""
