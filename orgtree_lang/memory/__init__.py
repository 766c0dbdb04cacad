"""The memory: a content store of texts, a context-recursion tree that fits them into any budget, and search.

Public API (stable; see docs/memory.md):

    from orgtree_lang.memory import Memory, fit
    memory = Memory(workspace_root)             # or Memory(None): a temporary one
    doc = memory.add(text, name="notes.md", tags=["pad"])
    view = memory.fit([doc], "gpt-4o", share=0.25)      # view.text fits 25% of gpt-4o's window
    memory.expand(view.nodes[0])                # children, or the original text of a piece
    hits = memory.search("query", k=5)          # hybrid keyword + vector, with original spans

Importing this package is cheap: tantivy, faiss and torch load only when search is used.
"""

from orgtree_lang.memory.budget import Budget, BudgetError
from orgtree_lang.memory.memory import Memory, MemoryInputError, fit
from orgtree_lang.memory.nodes import Node, Span
from orgtree_lang.memory.summarize import ExtractiveSummarizer, ModelSummarizer, Summarizer
from orgtree_lang.memory.tree import View

__all__ = ["Budget", "BudgetError", "ExtractiveSummarizer", "Memory", "MemoryInputError", "ModelSummarizer",
           "Node", "Span", "Summarizer", "View", "fit"]
