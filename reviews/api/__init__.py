"""The review API for services: list pending items, fetch one, post decisions.

Token-authenticated (`auth`), described by an OpenAPI 3.1 document (`openapi`, served at
`/api/v1/openapi.json`), and answering decisions through the same service as the inbox
(`views`).
"""
