"""Memory: the content store and context recursion, hybrid search, the shared scratchpad, and insights."""
