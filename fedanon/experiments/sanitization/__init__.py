"""Sanitization reproduction: the thesis's rules and tables and the runs that compare with them."""
