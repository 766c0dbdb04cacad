"""The model layer: one `Model` interface and its backends (litellm, scripted, record/replay); see docs/models.md."""

from orgtree_lang.models.base import Completion, Message, Model, ModelError, Usage

__all__ = ["Completion", "Message", "Model", "ModelError", "Usage"]
