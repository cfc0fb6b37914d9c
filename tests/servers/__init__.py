"""Real servers the tests start on 127.0.0.1 (no mocks of Rook's own parts)."""
