"""Readers of the inputs: tables and the benchmark data directory."""
