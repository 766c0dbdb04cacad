"""A run seen from outside: OpenTelemetry spans exported over OTLP/HTTP."""
