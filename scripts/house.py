#!/usr/bin/env python3
"""The house's figures: non-test lines per crate and the longest non-test functions.

    python3 scripts/house.py              # the table, then functions over 120 lines
    python3 scripts/house.py --limit 80   # another function limit
    python3 scripts/house.py --check      # exit 1 if a crate is over --crate-limit
                                          # or a function over --limit

Non-test code: every .rs file under crates/*/src, less files named tests.rs,
tests_*.rs or *_tests.rs, less files under a tests/ folder, less every item
marked #[cfg(test)]. A line counts when it is neither blank nor only a comment.
A function's length is its physical lines from `fn` to its closing brace.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?((const|async|unsafe|extern\s+\"[^\"]*\")\s+)*fn\s+(\w+)")


def is_test_file(path: pathlib.Path) -> bool:
    name = path.name
    return (
        name == "tests.rs"
        or name.startswith("tests_")
        or name.endswith("_tests.rs")
        or "tests" in path.relative_to(ROOT).parts[2:-1]
    )


def code_mask(text: str) -> str:
    """`text` with comments, strings and char literals blanked (newlines kept),
    so that braces and keywords can be matched by position."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif m := re.match(r'b?r(#*)"', text[i:i + 300]) if c in "br" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) else None:
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            if i + 2 < n and text[i + 1] == "\\":
                j = text.find("'", i + 2)
                j = n if j < 0 else j + 1
                out.append(" " * (j - i))
                i = j
            elif i + 2 < n and text[i + 2] == "'":
                out.append("   ")
                i += 3
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(lines, start):
    """Index of the last line of the item that begins at `start` (after its
    attributes): a `;` before any `{` ends it on that line, else the matching brace."""
    depth, opened = 0, False
    for k in range(start, len(lines)):
        for ch in lines[k]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return k
            elif ch == ";" and not opened and depth == 0:
                return k
    return len(lines) - 1


def non_test_lines(text: str):
    """(masked lines, original lines, keep[i]) for one file."""
    masked = code_mask(text).split("\n")
    orig = text.split("\n")
    keep = [True] * len(masked)
    i = 0
    while i < len(masked):
        if re.match(r"\s*#\[cfg\(test\)\]", masked[i]):
            j = i + 1
            while j < len(masked) and (masked[j].strip().startswith("#[") or not masked[j].strip()):
                j += 1
            end = item_end(masked, j)
            for k in range(i, end + 1):
                keep[k] = False
            i = end + 1
        else:
            i += 1
    return masked, orig, keep


def scan(limit):
    crates, long_fns = {}, []
    for src in sorted(ROOT.glob("crates/*/src")):
        crate = src.parent.name
        total = 0
        for path in sorted(src.rglob("*.rs")):
            if is_test_file(path):
                continue
            masked, orig, keep = non_test_lines(path.read_text())
            total += sum(1 for m, k in zip(masked, keep) if k and m.strip())
            for i, line in enumerate(masked):
                if keep[i] and (m := FN.match(line)):
                    end = item_end(masked, i)
                    length = end - i + 1
                    if length > limit and "{" in "".join(masked[i:end + 1]):
                        rel = path.relative_to(ROOT)
                        long_fns.append((length, f"{rel}:{i + 1}", m.group(5)))
        crates[crate] = total
    return crates, sorted(long_fns, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=120, help="function length to report (lines)")
    ap.add_argument("--crate-limit", type=int, default=10_000, help="crate size to flag (non-test lines)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a figure is over its limit")
    args = ap.parse_args()
    crates, long_fns = scan(args.limit)
    print(f"{'crate':<20} {'non-test lines':>14}")
    for crate, n in sorted(crates.items(), key=lambda kv: -kv[1]):
        flag = "  over" if n > args.crate_limit else ""
        print(f"{crate:<20} {n:>14}{flag}")
    print(f"\n{len(long_fns)} non-test functions over {args.limit} lines")
    for length, where, name in long_fns:
        print(f"{length:>5}  {name}  {where}")
    over = any(n > args.crate_limit for n in crates.values()) or long_fns
    sys.exit(1 if args.check and over else 0)


if __name__ == "__main__":
    main()
