"""What a line-number gutter costs, in real tokens per line, on real files of several kinds.

    python bench/gutter.py [--files 25]

Samples installed files (this interpreter's site-packages for Python, C, C headers and
Markdown; npm's own JavaScript when Node is installed), up to `--files` of each kind with
60 to 3,000 lines, sorted by path so a run is reproducible on one machine. For each
gutter form it prints, per kind and for o200k_base and cl100k_base, the tokens the
numbered rows cost beyond the same lines without numbers, divided by the line count.

The target (issue 28): at most 1.5 tokens a line on ordinary code, with exact line
numbers and a clear separator. `read_file` prints the `N<TAB>` form.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_fstools.core.tokens import default_counter

if TYPE_CHECKING:
    from collections.abc import Callable

FORMS: dict[str, Callable[[int], str]] = {
    "     12→ (before)": lambda n: f"{n:>6}→",
    "12→": lambda n: f"{n}→",
    "12: ": lambda n: f"{n}: ",
    "12|": lambda n: f"{n}|",
    "12<TAB> (now)": lambda n: f"{n}\t",
    "12<SPACE>": lambda n: f"{n} ",
}
TARGET = 1.5


def samples(count: int) -> dict[str, list[str]]:
    """Up to `count` texts of each kind, 60 to 3,000 lines long."""
    site = Path(sysconfig.get_paths()["purelib"])
    globs = {
        "Python": (site, "langchain_core/**/*.py"),
        "JavaScript": (Path("/usr/lib/node_modules/npm/lib"), "**/*.js"),
        "C": (site, "**/*.c"),
        "C headers": (site, "**/*.h"),
        "Markdown": (site, "**/*.md"),
    }
    found: dict[str, list[str]] = {}
    for kind, (root, pattern) in globs.items():
        texts: list[str] = []
        for path in sorted(root.glob(pattern)) if root.is_dir() else []:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if 60 <= text.count("\n") <= 3000:
                texts.append(text)
            if len(texts) == count:
                break
        if texts:
            found[kind] = texts
    return found


def main() -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=25)
    args = parser.parse_args()
    kinds = samples(args.files)
    for encoding in ("o200k_base", "cl100k_base"):
        count = default_counter(encoding)
        print(f"\n{count.name}: extra tokens per line")
        print(f"{'gutter':<20}" + "".join(f"{kind:>12}" for kind in kinds))
        print(
            f"{'(files, lines)':<20}"
            + "".join(
                f"{f'{len(t)}, {sum(s.count(chr(10)) + 1 for s in t)}':>12}" for t in kinds.values()
            )
        )
        for name, gutter in FORMS.items():
            cells = []
            for texts in kinds.values():
                extra = lines = 0
                for text in texts:
                    rows = text.split("\n")
                    numbered = "\n".join(gutter(n) + row for n, row in enumerate(rows, 1))
                    extra += count(numbered) - count(text)
                    lines += len(rows)
                cells.append(f"{extra / lines:>12.2f}")
            print(f"{name:<20}" + "".join(cells))
    print(f"\nTarget: at most {TARGET} tokens a line on ordinary code (Python, JavaScript).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
