"""The skill pool: call history, bug reports reviewed by another agent, and modules promoted to `learned.*` skills."""
