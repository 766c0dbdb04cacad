"""Where slow skill calls and remote nodes run: local threads, a Ray cluster, and the table that picks one."""
