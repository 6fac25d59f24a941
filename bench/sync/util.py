#!/usr/bin/env python3
"""Small helpers for run.sh (Python 3 standard library only).

  util.py now                      print CLOCK_MONOTONIC in ns
  util.py ports N                  print N free TCP ports on 127.0.0.1
  util.py exec STAMPFILE CMD...    write CLOCK_MONOTONIC ns to STAMPFILE, then exec CMD
                                   (same PID, so the caller's $! is the command's PID)
  util.py wait-port PORT SECONDS   wait until 127.0.0.1:PORT accepts connections
  util.py cpu PID                  print user+system CPU seconds of a process
"""
import os
import socket
import sys
import time


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd = argv[1]
    if cmd == "now":
        print(now())
    elif cmd == "ports":
        socks = []
        for _ in range(int(argv[2])):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        print(" ".join(str(s.getsockname()[1]) for s in socks))
        for s in socks:
            s.close()
    elif cmd == "exec":
        stamp, args = argv[2], argv[3:]
        with open(stamp + ".tmp", "w") as f:
            f.write(f"{now()}\n")
        os.rename(stamp + ".tmp", stamp)
        os.execvp(args[0], args)
    elif cmd == "wait-port":
        port, end = int(argv[2]), time.monotonic() + float(argv[3])
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return 0
            except OSError:
                if time.monotonic() > end:
                    return 1
                time.sleep(0.05)
    elif cmd == "cpu":
        try:
            with open(f"/proc/{argv[2]}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = os.sysconf("SC_CLK_TCK")
            print(f"{(int(fields[11]) + int(fields[12])) / ticks:.2f}")
        except OSError:
            print("n/a")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
