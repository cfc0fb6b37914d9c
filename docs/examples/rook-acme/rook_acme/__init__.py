"""rook-acme: an example third-party plugin for Rook.

The plugin module is :mod:`rook_acme.plugin` (entry point ``acme`` in the
``rook`` group); :mod:`rook_acme.desk` is the toy agent it reaches.
"""

__version__ = "0.1.0"
