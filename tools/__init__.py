"""Developer tools: the installed layout, type checking, import rewrites."""
