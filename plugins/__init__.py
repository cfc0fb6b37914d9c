"""Rook's built-in plugins.

Each module here is registered under ``[project.entry-points.rook]`` and
loaded exactly as a third-party plugin is; ``rook_core`` never imports them.
"""
