# tries: read secrets from the host's environment variables
# expect: contained
import os

leaked = {k: v for k, v in os.environ.items() if "SECRET" in k or k.startswith(("AWS", "OPENAI", "ANTHROPIC"))}
print("ESCAPED", leaked) if leaked else print("contained: environment is", sorted(os.environ))
