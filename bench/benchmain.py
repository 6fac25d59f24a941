"""How the Python benches start and end (bench/resources/measure.py,
bench/snapcast/measure.py, bench/sync/snapcast_sync.py): SIGINT, SIGTERM and
SIGHUP raise KeyboardInterrupt, so each script's `finally` stops what it
started; then one line says so (exit 130). A RuntimeError is a FAILED line
(exit 1). Standard library only."""
import signal
import sys


def run(main, interrupted="interrupted: stopped every process started and removed the work folder"):
    def raise_interrupt(signum, _frame):
        raise KeyboardInterrupt
    # Installed explicitly: a shell starts background jobs with SIGINT
    # ignored, and Python then keeps it ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, raise_interrupt)
    try:
        status = main()
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        sys.exit(130)
    except RuntimeError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    sys.exit(status)
