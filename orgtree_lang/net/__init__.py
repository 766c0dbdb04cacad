"""Reach the web: http.fetch, web.extract and web.search behind the workspace's allowlist."""
