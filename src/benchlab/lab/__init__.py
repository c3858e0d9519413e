"""The lab: many hosts and their devices, one PostgreSQL, a server with pages and an API.

Layers, top down: ``server`` (FastAPI app, pages, JSON API) and ``worker`` (a host's device
agent) use ``queue`` (procrastinate: submit, cancel, requeue), which uses ``jobs``,
``devices``, ``pools`` and ``tokens`` (the lab's tables in the results store). procrastinate,
FastAPI and uvicorn are imported only inside these modules, never by ``import benchlab``.
"""
