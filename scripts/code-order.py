#!/usr/bin/env python3
"""Writes link/code-order.txt from callgrind profiles (see scripts/code-order.sh).

The kernel maps 64 KiB of a program's code around each page it faults in,
so code that runs scattered over 11 MB of text keeps megabytes resident.
lld places the functions named in the file first, in its order: those that
run in steady state, then those that run only at start-up. Within each
group, the program's own address order, which keeps a module's functions
together.

  code-order.py OUT --binary B [--binary B ...] --steady OBJ:PROFILE ... --start-up OBJ:PROFILE ...

OBJ is the file name of the profiled program as callgrind saw it (its
functions are taken, not those of the shared libraries it loads).
"""
import argparse
import re
import subprocess


def functions_run(profile, program):
    """Names of the functions of `program` that a callgrind profile saw run.

    callgrind names each object (ob=, cob=) and function (fn=, cfn=) once as
    "(id) name" and after that as "(id)"."""
    objects, names, seen = {}, {}, set()
    current_object = callee_object = None

    def resolve(table, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1))

    with open(profile, errors="replace") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            if key == "ob":
                current_object, callee_object = resolve(objects, value), None
            elif key == "cob":
                callee_object = resolve(objects, value)
            elif key in ("fn", "cfn"):
                name = resolve(names, value)
                if name:
                    name = re.sub(r"'\d+$", "", name)  # callgrind's mark of a recursion cycle
                owner = callee_object if key == "cfn" and callee_object else current_object
                if key == "cfn":
                    callee_object = None
                if owner and owner.split("/")[-1] == program and name:
                    seen.add(name)
    return seen


def addresses(binary):
    found = {}
    listing = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            found.setdefault(parts[2], int(parts[0], 16))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--binary", action="append", required=True)
    ap.add_argument("--steady", nargs="+", default=[])
    ap.add_argument("--start-up", nargs="+", default=[])
    args = ap.parse_args()
    address = {}
    for b in args.binary:
        for name, a in addresses(b).items():
            address.setdefault(name, a)

    def gather(specs):
        names = set()
        for spec in specs:
            program, profile = spec.split(":", 1)
            names |= {n for n in functions_run(profile, program) if n in address}
        return names

    steady = gather(args.steady)
    start_up = gather(args.start_up) - steady
    with open(args.out, "w") as f:
        for group in (steady, start_up):
            for name in sorted(group, key=lambda n: (address[n], n)):
                f.write(name + "\n")
    print(f"{args.out}: {len(steady)} functions of steady state, then {len(start_up)} of start-up")


if __name__ == "__main__":
    main()
