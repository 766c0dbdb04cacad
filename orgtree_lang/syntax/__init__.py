"""Turn .pipe source text into a syntax tree, with spans and diagnostics."""
