"""Settings of the whole test suite."""

import os

# pb-gym's line about compiling its kernels (pb_gym.progress.note_compiling) would land in the stderr of
# whichever test, or process a test starts, first compiles a kernel on a cold cache (after any edit of
# the sources): the checks of stderr hold the same, warm cache or cold, without it. Its own tests turn it
# back on.
os.environ["PB_GYM_COMPILE_NOTE"] = "0"
