"""Association-rule sanitization: hide sensitive rules by deleting items (IGA, RRA, RA, SWA)
or by releasing a sanitized frequent-itemset graph (DSA); the thesis's metrics HF, MC, AP, Dif, SEF.
"""
