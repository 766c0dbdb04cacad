"""Run compiled programs: frames, the dispatch loop, budgets, serializable run state and traces."""
