"""Ambiguous-block resolution: block specs, generated-module extraction and validation, and the module store."""
