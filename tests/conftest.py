"""Suite-wide: Ctrl-C reaches the processes the tests start.

A non-interactive shell that starts a job in the background (`tools/test.sh &`, `nohup ... &`)
sets SIGINT to ignored, an ignored signal stays ignored in every process started from there,
and Python then installs no KeyboardInterrupt handler: the tests of Ctrl-C teardown would send
SIGINT to children that never see it. A handled signal is reset to the default on exec, so
handling it here gives every child the SIGINT a terminal would.
"""

import signal

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
