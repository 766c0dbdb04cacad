"""Runtime services the VM calls out to: values, records, skills, the workspace."""
