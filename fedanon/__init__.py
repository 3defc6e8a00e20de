"""fedanon: joint anonymization of hospital tables (LKC-privacy over a gRPC ring, DRBT, ...)."""

__version__ = "0.1.0"
