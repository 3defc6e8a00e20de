"""(alpha,k)-anonymity reproduction on Adult (the paper's query-error figures)."""
