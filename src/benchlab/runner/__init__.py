"""benchlab's on-target measuring loop for Python runtimes.

Started as ``python -m benchlab.runner '<json>'`` in a fresh process per repetition; it loads
one model through a runtime backend, times it, and prints metric lines on stdout exactly as a
native benchmark binary on a phone would.
"""
