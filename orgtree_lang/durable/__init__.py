"""Durable runs: the journal, checkpoints, and resume, replay, retry and fork built on them."""
