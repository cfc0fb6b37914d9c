pytest_plugins = ["rook_core.testing"]
