"""Utility measures and protocols shared by every method."""
