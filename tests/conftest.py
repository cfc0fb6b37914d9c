import os
import tempfile

import pytest

pytest_plugins = ["rook_core.testing"]


@pytest.fixture(autouse=True, scope="session")
def _own_cache_dir():
    """Every command the suite runs (in process or as a subprocess) uses one
    fresh cache directory, never the user's ~/.cache/rook."""
    with tempfile.TemporaryDirectory(prefix="rook-test-cache-") as d:
        os.chmod(d, 0o700)
        old = os.environ.get("ROOK_CACHE_DIR")
        os.environ["ROOK_CACHE_DIR"] = d
        yield d
        if old is None:
            os.environ.pop("ROOK_CACHE_DIR", None)
        else:
            os.environ["ROOK_CACHE_DIR"] = old
