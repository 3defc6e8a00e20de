"""The public Python API of every method family beside LKC, one module per family."""
