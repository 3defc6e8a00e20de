"""DRBT reproduction: the thesis's printed figures and the run that compares with them."""
