"""The .pipe grammar, shipped as package data."""
