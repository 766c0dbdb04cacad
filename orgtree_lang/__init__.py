"""orgtree_lang: a language for agents that break hard problems down into programs they can run, check and reuse."""

__version__ = "0.1.0"
