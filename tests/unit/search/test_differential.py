"""Differential tests against the real tools: git for ignore rules, ripgrep for matches.

A random tree with nested .gitignore files (negations, anchored and directory
patterns, wildcards) is generated; the files glob lists must be exactly what
`git ls-files --cached --others --exclude-standard` lists, on every engine. Then a set
of literal and regex queries must find exactly the (file, line) pairs `rg` finds.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from langchain_fstools.search.ripgrep import find_ripgrep
from tests.unit.tools.harness import BACKENDS, Harness, listed_paths

WORDS = ["alpha", "beta", "gamma", "delta", "build", "cache", "main", "test", "data", "log"]
EXTENSIONS = [".py", ".txt", ".log", ".md", ".tmp", ".js", ""]
IGNORE_LINES = [
    "*.log",
    "*.tmp",
    "!keep.tmp",
    "/build/",
    "cache/",
    "**/gen_*",
    "!gen_keep.py",
    "data/*.txt",
    "/top-only.md",
    "node_modules/",
    "# a comment",
    "",
    "\\#literal",
    "deep/**/x.js",
    "*.md",
    "!README.md",
]


def make_tree(root: Path, seed: int) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    files: list[tuple[str, bytes]] = []
    directories = [""]
    for _ in range(25):
        parent = rng.choice(directories)
        name = rng.choice([*WORDS, "node_modules", "deep", ".hidden"])
        directories.append(f"{parent}/{name}".lstrip("/"))
    for _ in range(180):
        directory = rng.choice(directories)
        stem = rng.choice(
            [*WORDS, "gen_x", "gen_keep", "keep", "README", "top-only", "x", "#literal"]
        )
        name = stem + rng.choice(EXTENSIONS)
        lines = [
            " ".join(rng.choices([*WORDS, "a.b", "x(y)", "MAIN", "\tTab"], k=rng.randint(1, 6)))
            for _ in range(rng.randint(0, 8))
        ]
        body = "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
        files.append((f"{directory}/{name}".lstrip("/"), body.encode()))
    for directory in rng.sample(directories, 8):
        chosen = rng.sample(IGNORE_LINES, rng.randint(2, 6))
        files.append((f"{directory}/.gitignore".lstrip("/"), ("\n".join(chosen) + "\n").encode()))
    written: dict[str, bytes] = {}
    for relative, data in files:
        target = root / relative
        if any(p.is_file() for p in target.parents if root in p.parents):
            continue
        if target.is_dir():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written[relative] = data
    return sorted(written.items())


def git_files(root: Path) -> set[str]:
    assert shutil.which("git"), "git is required (.ci/run installs it)"
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("*.exclude-me\n")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    return {"/" + p for p in listed.decode().split("\0") if p}


@pytest.mark.parametrize("seed", range(6))
def test_files_considered_equal_git_ls_files(tmp_path: Path, seed: int) -> None:
    reference = Harness("local", tmp_path / "reference")
    tree = make_tree(reference.root, seed)
    (reference.root / "x.exclude-me").write_text("excluded by .git/info/exclude\n")
    expected = git_files(reference.root)
    assert len(expected) > 50
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind, glob_limit=100_000)
        for relative, data in tree:
            h.seed("/" + relative, data)
        h.seed("/x.exclude-me", b"excluded\n")
        h.seed("/.git/info/exclude", b"*.exclude-me\n")
        h.seed("/.git/HEAD", b"ref: refs/heads/main\n")
        listed = set(listed_paths(h.call("glob", pattern="**").content))
        assert listed == expected, (kind, sorted(listed ^ expected))


QUERIES: list[tuple[str, dict[str, object]]] = [
    ("alpha", {}),
    ("a.b", {}),
    ("x(y)", {}),
    ("main", {"-i": True}),
    ("\tTab", {}),
    (r"\bbeta\b", {"regex": True}),
    (r"^gamma", {"regex": True}),
    (r"delta$", {"regex": True}),
    (r"(alpha|omega) beta", {"regex": True}),
    (r"[ab]\w+a", {"regex": True}),
    ("data", {"glob": "*.py"}),
    ("test", {"type": "md"}),
]


def rg_pairs(root: Path, pattern: str, options: dict[str, object]) -> set[tuple[str, int]]:
    executable = find_ripgrep()
    assert executable is not None
    command = [
        executable,
        "--no-config",
        "--hidden",
        "--no-require-git",
        "--no-ignore-global",
        "-n",
        "--no-heading",
        "--with-filename",
        "-g",
        "!.git/",
    ]
    command.append("--no-fixed-strings" if options.get("regex") else "--fixed-strings")
    if options.get("-i"):
        command.append("-i")
    if "glob" in options:  # a type keeps ignore rules in force; a positive -g would not
        command += ["--type-add", f"query:{options['glob']}", "-t", "query"]
    if "type" in options:
        command += ["-t", str(options["type"])]
    out = subprocess.run(
        [*command, "-e", pattern], cwd=root, capture_output=True, check=False
    ).stdout.decode()
    pairs = set()
    for line in out.splitlines():
        path, number, _ = line.split(":", 2)
        pairs.add(("/" + path.removeprefix("./"), int(number)))
    return pairs


@pytest.mark.parametrize("seed", range(3))
def test_grep_matches_equal_ripgrep(tmp_path: Path, seed: int) -> None:
    reference = Harness("local", tmp_path / "reference")
    tree = make_tree(reference.root, seed)
    harnesses = []
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind)
        for relative, data in tree:
            h.seed("/" + relative, data)
        harnesses.append(h)
    for pattern, options in QUERIES:
        expected = rg_pairs(reference.root, pattern, options)
        for h in harnesses:
            out = h.call(
                "grep", pattern=pattern, output_mode="content", head_limit=0, **options
            ).content
            got = set()
            if not out.startswith("No matches"):
                for line in out.split("\n"):
                    path, number, _ = line.split(":", 2)
                    got.add((path, int(number)))
            assert got == expected, (h.kind, pattern, options, sorted(got ^ expected)[:5])


@pytest.mark.parametrize("kind", ["local", "local-python"])
def test_ignore_files_above_the_root_do_not_apply(tmp_path: Path, kind: str) -> None:
    # Like git at a repository root, neither engine reads ignore files of its parents.
    h = Harness(kind, tmp_path)
    (h.root.parent / ".gitignore").write_text("*.py\n")
    (h.root.parent / ".ignore").write_text("notes.txt\n")
    h.seed("/app.py", b"needle\n")
    h.seed("/notes.txt", b"needle\n")
    listed = listed_paths(h.call("glob", pattern="*").content)
    assert sorted(listed) == ["/app.py", "/notes.txt"]
    found = listed_paths("\n".join(h.call("grep", pattern="needle").content.split("\n")[1:]))
    assert sorted(found) == ["/app.py", "/notes.txt"]


@pytest.mark.parametrize("kind", ["local", "local-python"])
def test_searching_a_subdirectory_keeps_the_root_ignore_rules(tmp_path: Path, kind: str) -> None:
    h = Harness(kind, tmp_path)
    h.seed("/.gitignore", b"*.log\n")
    h.seed("/src/a.log", b"needle\n")
    h.seed("/src/b.py", b"needle\n")
    assert h.call("glob", pattern="*", path="/src").content == "/src/b.py"
    assert h.call("grep", pattern="needle", path="/src").content.split("\n")[1:] == ["/src/b.py"]


IGNORE_PRECEDENCE = {
    "/.git/info/exclude": "*.md\n",
    "/.gitignore": "*.log\n*.txt\n!b.md\n",
    "/.ignore": "!keep_ignore.log\n",
    "/.rgignore": "!keep_rg.log\n",
    "/sub/.gitignore": "!*.txt\n",
    "/sub/.ignore": "keep_ignore.log\n",
    "/sub/deeper/.rgignore": "a.txt\n",
    "/sub/deeper/.gitignore": "!*.log\n",
}


def test_ignore_files_take_precedence_as_in_ripgrep(tmp_path: Path) -> None:
    # By kind (.rgignore, .ignore, .gitignore, then exclude), the deepest file first.
    names = ["a.log", "keep_rg.log", "keep_ignore.log", "a.txt", "a.md", "b.md"]
    files = [f"{d}{name}" for d in ("/", "/sub/", "/sub/deeper/") for name in names]
    listings = []
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind, glob_limit=100_000)
        for path, text in IGNORE_PRECEDENCE.items():
            h.seed(path, text.encode())
        for path in files:
            h.seed(path, b"needle\n")
        listings.append((kind, sorted(listed_paths(h.call("glob", pattern="**").content))))
    expected = listings[0][1]  # ripgrep's
    assert "/sub/deeper/a.log" in expected
    assert "/sub/keep_ignore.log" not in expected
    assert "/sub/deeper/a.txt" not in expected
    for kind, listed in listings[1:]:
        assert listed == expected, kind
