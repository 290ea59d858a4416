"""The PEDL 0.x import paths (``pedl.frameworks.keras``, ``pedl.frameworks.tensorflow``).

They are adapters onto today's controllers, not a second implementation.
"""
