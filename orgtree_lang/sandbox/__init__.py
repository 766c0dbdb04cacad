"""Run untrusted code and fetch from the network inside fences: sandbox backends, code requests and URL allowlists."""
