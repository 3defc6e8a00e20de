"""Anonymization algorithms, one package each."""
