"""Rook: test AI agents through a fixed lifecycle of hooks.

The core holds the contract (:mod:`rook_core.hookspecs`) and the code that
drives it. It never imports a built-in plugin; built-ins are found through
the ``rook`` entry point group like any third-party package.
"""

__version__ = "0.1.0"
