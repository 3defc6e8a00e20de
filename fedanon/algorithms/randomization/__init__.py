"""Randomization by breaking attribute links: RA and enhanced RA(k), probabilistic anonymity Pa.

Read docs/randomization.md for the project's reading of the method (Yang and Qiao, 2010).
"""
