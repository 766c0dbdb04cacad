"""`pipe serve`: a small web app that shows a workspace's runs, org trees, modules and memory (docs/viewer.md)."""
