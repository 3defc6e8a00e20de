"""Cryptographic building blocks of fedanon's distributed mode.

Pure functions and small classes over bytes and numpy arrays: the party daemon and the leader
call them and carry their byte outputs over whatever transport they use. Only `fedanon.crypto.tls`
knows
about gRPC (credentials and caller identity); every other module is transport-free.

Modules, one job each:
- `masks`: uniform uint64 mask vectors from an AES-CTR keystream.
- `secure_sum`: ring-mode secure sum (initiator masks, members add, initiator unmasks).
- `sealed_total`: the ring's last member seals the masked total to the initiator, so the
  members relaying it back cannot read it.
- `pairwise`: collusion-resistant secure sum with pairwise X25519-derived masks.
- `keyshare`: per-session X25519 public keys signed with a party's certificate key.
- `onion_union`: multiset union by layered encryption and shuffling.
- `parallel`: worker processes for the union's per-record layer (same output, other cores).
- `commutative`: set union with duplicates removed by commutative (SRA) encryption.
- `identity`: federation CA, party/leader certificates, key files.
- `tls`: gRPC mutual-TLS credentials and the authenticated caller's identity.
- `shuffle`, `wire`, `errors`: cryptographic shuffle, byte encodings, error types.
- `simulate`: every role of each protocol run in one process (tests, benchmarks, reference).
"""
