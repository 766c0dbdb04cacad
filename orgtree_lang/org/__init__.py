"""The organization's runtime: the nodes of a run working at once, as the machine's Org (vm/organization.py)."""
