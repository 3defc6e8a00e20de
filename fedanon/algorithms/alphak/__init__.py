"""(alpha,k)-anonymity: global and local recoding, the lossy-join release and Anatomy."""
