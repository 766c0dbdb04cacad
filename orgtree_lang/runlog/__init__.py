"""The organization tree: every run, pipeline call, skill call and generated child of a run, as nodes."""
