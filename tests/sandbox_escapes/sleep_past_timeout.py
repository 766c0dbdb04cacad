# tries: sleep far past the wall-clock timeout (CPU limits alone would never stop it)
# expect: timed_out
import time

time.sleep(60)
print("ESCAPED slept through")
