#!/usr/bin/env python3
"""Compares the `SELECT * FROM <view>` cases of a .slt file with the Postgres blocks of joins_check.sql or
updating_check.sql (as printed by run.sh suites):

    python3 compare_slt.py tests/sqllogic/testdata/joins.slt pg_output.txt

Postgres prints "-- <check point>", then "-- <view>" and the view's rows. The .slt's cases of a view must match
that view's Postgres states in order (a case may repeat the previous state, e.g. after a restart). Exit status 1
on a mismatch.
"""
import re
import sys


def pg_blocks(lines):
    blocks, cur, label = [], None, None
    for line in lines:
        if line.startswith("-- "):
            name = line[3:]
            if " " in name:
                label, cur = name, None
                continue
            cur = [label, name, []]
            blocks.append(cur)
        elif cur is not None and line.strip():
            cur[2].append(line)
    return blocks


def slt_cases(lines):
    cases, i = [], 0
    while i < len(lines):
        if lines[i].startswith("query ") and "error" not in lines[i].split()[1:2]:
            m = re.match(r"SELECT \* FROM (\w+)\s*$", lines[i + 1])
            j = i + 1
            while lines[j].strip() != "----":
                j += 1
            j += 1
            rows = []
            while j < len(lines) and lines[j].strip():
                rows.append(lines[j].rstrip())
                j += 1
            if m:
                cases.append((i + 1, m.group(1), rows))
            i = j
        i += 1
    return cases


def main():
    slt = open(sys.argv[1]).read().split("\n")
    blocks = pg_blocks(open(sys.argv[2]).read().split("\n"))
    pos, bad, n = {}, 0, 0
    for line, view, rows in slt_cases(slt):
        found = None
        for k, (label, name, pg_rows) in enumerate(blocks):
            if name == view and k >= pos.get(view, 0) and sorted(pg_rows) == sorted(rows):
                found = (k, label)
                break
        n += 1
        if found is None:
            bad += 1
            print("%s:%d: %s differs from every later Postgres state" % (sys.argv[1], line, view))
        else:
            pos[view] = found[0]
    print("%s: %d of %d view cases match Postgres" % (sys.argv[1], n - bad, n))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
