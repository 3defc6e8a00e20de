"""Privacy models and their independent checkers."""
