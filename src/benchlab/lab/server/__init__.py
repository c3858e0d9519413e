"""The lab server: one FastAPI app with the JSON API (``/api/v1``) and server-rendered pages."""
