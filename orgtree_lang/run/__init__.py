"""Assemble runs: registries, services and machines, above every layer they wire together."""
