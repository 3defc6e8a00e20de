"""Federation plumbing shared by the party and the leader: wire codecs, TLS, key shares."""
