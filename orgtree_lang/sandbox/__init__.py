"""Run untrusted code inside fences: sandbox backends, environments, code requests and the URL allowlist web fetches obey."""
