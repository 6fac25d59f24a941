#!/usr/bin/env python3
"""Counts the Swift test functions (`@Test func` under Tests/) whose own body
calls usleep, sleep(, nanosleep, Thread.sleep or Task.sleep: tests that wait a
fixed time instead of for what they wait for (issue 33).

    scripts/sleeping-tests.py          # prints "SLEEPING of TOTAL"
    scripts/sleeping-tests.py --list   # and each sleeping test, with its file

It also prints the fixed sleep time those calls name (each call once, a
call in a loop too; calls whose argument is not a literal count nothing).

Helpers a test calls are not followed (`waitUntil` polls a condition; it is
not a fixed sleep)."""
import os, re, sys

LITERAL = [(re.compile(r'(?<![\w.])usleep\(\s*([\d_]+)\s*\)'), 1e-6), (re.compile(r'(?<![\w.])sleep\(\s*([\d_]+)\s*\)'), 1.0),
           (re.compile(r'\bThread\.sleep\(forTimeInterval:\s*([\d_.]+)\s*\)'), 1.0)]
SLEEP = re.compile(r'(?<![\w.])(usleep|sleep|nanosleep)\s*\(|\bThread\.sleep\b|\bTask\.sleep\b')

def seconds(body):
    return sum(float(m.group(1).replace('_', '')) * unit for pattern, unit in LITERAL for m in pattern.finditer(body))

def strip(text):
    """The text with comments and string literals blanked (newlines kept),
    so braces and words inside them count for nothing."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == '"':
            j, depth = i + 1, 0
            while j < n and text[j] != '\n':
                if text[j] == '\\':
                    # an interpolation \( ... ) may hold code: keep it
                    if j + 1 < n and text[j + 1] == '(':
                        depth += 1; j += 2; continue
                    j += 2; continue
                if depth and text[j] == ')': depth -= 1
                elif not depth and text[j] == '"': break
                j += 1
            out.append('"' + ' ' * (j - i - 1) + ('"' if j < n else '')); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

def tests(path):
    code = strip(open(path, encoding='utf-8').read())
    for m in re.finditer(r'@Test\b', code):
        f = re.compile(r'\bfunc\s+(\w+)').search(code, m.end())
        if not f: continue
        start = code.find('{', f.end())
        depth, j = 0, start
        while j < len(code):
            if code[j] == '{': depth += 1
            elif code[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        yield f.group(1), code[start:j + 1]

def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests')
    total, sleeping, slept = 0, [], 0.0
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith('.swift'): continue
            path = os.path.join(dirpath, name)
            for test, body in tests(path):
                total += 1
                if SLEEP.search(body):
                    slept += seconds(body)
                    sleeping.append((os.path.relpath(path, os.path.join(root, '..')), test, len(SLEEP.findall(body))))
    if '--list' in sys.argv:
        for path, test, calls in sleeping:
            print(f'{path} {test} ({calls})')
    print(f'{len(sleeping)} of {total} test functions sleep; {slept:.1f} s of fixed sleeps named in them')

main()
