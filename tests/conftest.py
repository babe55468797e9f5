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


from pathlib import Path  # noqa: E402  (after the signal fix above, which must run first)

import pytest  # noqa: E402

#: The markers of tests that load the whole machine: real servers and benchmark tools, containers,
#: Chromium, source builds, act, qemu. Under pytest-xdist (`--dist loadgroup`, as tools/test.sh
#: runs the suite) they all go to one worker and run one after another, exactly as in a serial
#: run: two of them at once on a 2-core machine would slow each other past their timeouts and
#: add noise to what they measure. Every other test (unit, hardening, workflow rules) spreads
#: over the remaining workers meanwhile.
MACHINE_MARKERS = ("integration", "compose", "browser", "sourcebuild", "act", "arm64")
#: The workflow runs under nektos/act: every test there is an `act` test, marked here (not in that
#: folder's conftest) so the mark exists before the grouping below reads it.
ACT_TESTS = Path(__file__).resolve().parent / "workflows" / "act"


# tryfirst: xdist's own hook (loadgroup) reads the xdist_group marks, and a plugin registered
# after this conftest would otherwise run first and see none.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent == ACT_TESTS:
            item.add_marker(pytest.mark.act)
        if any(item.get_closest_marker(marker) for marker in MACHINE_MARKERS):
            item.add_marker(pytest.mark.xdist_group("machine"))
    # The group starts with the act runs (8 minutes of containers that assert outcomes, never
    # timing), so the other workers' few minutes of unit tests overlap them rather than the
    # tests whose measurements or deadlines a busy second core could disturb.
    items.sort(key=lambda item: item.path.parent != ACT_TESTS)
