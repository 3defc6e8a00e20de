"""The fixed choices the parser offers, spelled here so that building it imports no library.

The modules that define these names pull in numpy, pandas or cryptography; `fedanon --help`
and argument errors must not pay for that (docs/cli.md, "Start-up"). A test compares every
tuple with the library's own constant, so the two cannot drift apart.
"""

# fedanon.algorithms.tds.api.PRESETS
LKC_PRESETS = ("lkc", "k-anonymity", "confidence-bounding", "alpha-k")
LKC_SCORES = ("infogain", "discernibility")  # fedanon.algorithms.tds.scores.SCORES
DRBT_MATRICES = ("gaussian", "sparse")  # fedanon.algorithms.drbt.matrices.MATRICES
DRBT_STARTS = ("paired", "independent")  # fedanon.algorithms.drbt.protocol.STARTS
SANITIZE_DATA_SHARING = ("iga", "rra", "ra", "swa")  # ...sanitization.api.DATA_SHARING
SANITIZE_ALGORITHMS = (*SANITIZE_DATA_SHARING, "dsa")  # ...sanitization.api.ALGORITHMS
SANITIZE_DEFAULT_WINDOW = 50_000  # ...sanitization.api.DEFAULT_WINDOW
RULE_SUPPORTS = ("itemset", "antecedent", "apriori")  # fedanon.utility.miner.RULE_SUPPORTS
MINING_MAX_ITEMSETS = 1_000_000  # fedanon.utility.miner.MAX_ITEMSETS
CERT_ROLES = ("party", "leader")  # fedanon.crypto.identity.ROLES
SUM_MODES = ("ring", "pairwise", "sparse")  # fedanon.leader.config.SUM_MODES
RING_SUM_MODE = "ring"  # fedanon.leader.ring_settings.RING_SUM_MODE
CLASSIFICATION_SUM_MODE = "pairwise"  # fedanon.leader.ring_settings.CLASSIFICATION_SUM_MODE
TRANSPORTS = ("direct", "outbound")  # fedanon.federation.config.TRANSPORTS
