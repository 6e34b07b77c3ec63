"""Helpers shared by the session, stdio, interop and lifecycle tests."""
