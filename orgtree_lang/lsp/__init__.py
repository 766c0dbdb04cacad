"""The language server for .pipe files: diagnostics, hover, definitions, completion, formatting and an outline."""
