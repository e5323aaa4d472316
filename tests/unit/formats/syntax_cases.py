"""Small valid files, one per checked language, and two edits that each break one line.

`breaking` is the change under test; `other` is an unrelated error elsewhere in the
file, there before the change. Each edit replaces the first occurrence of its old text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    language: str
    path: str
    text: str
    breaking: tuple[str, str]
    other: tuple[str, str]

    def line_of(self, old: str) -> int:
        return self.text[: self.text.index(old)].count("\n") + 1

    @property
    def broken(self) -> str:
        return self.text.replace(*self.breaking, 1)

    @property
    def with_other(self) -> str:
        return self.text.replace(*self.other, 1)

    @property
    def break_line(self) -> int:
        return self.line_of(self.breaking[0])

    @property
    def other_line(self) -> int:
        return self.line_of(self.other[0])


CASES = [
    Case(
        "python",
        "/app.py",
        "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n",
        ("return a + b", "return a +"),
        ("print(add(1, 2))", "print(add(1, 2)))"),
    ),
    Case(
        "javascript",
        "/app.js",
        "function add(a, b) {\n  return a + b;\n}\n\nconsole.log(add(1, 2));\n",
        ("return a + b;", "return a + ;"),
        ("console.log(add(1, 2));", "console.log(add(1, 2)));"),
    ),
    Case(
        "typescript",
        "/app.ts",
        "function add(a: number, b: number): number {\n  return a + b;\n}\n\n"
        "console.log(add(1, 2));\n",
        ("return a + b;", "return a + ;"),
        ("console.log(add(1, 2));", "console.log(add(1, 2)));"),
    ),
    Case(
        "tsx",
        "/App.tsx",
        "function App(): JSX.Element {\n  return <div>{1 + 2}</div>;\n}\n\nexport default App;\n",
        ("return <div>{1 + 2}</div>;", "return <div>{1 + }</div>;"),
        ("export default App;", "export default App App;"),
    ),
    Case(
        "json",
        "/package.json",
        '{\n  "name": "demo",\n  "version": 1,\n  "tags": ["a", "b"]\n}\n',
        ('"version": 1,', '"version": 1,,'),
        ('"tags": ["a", "b"]', '"tags": ["a" "b"]'),
    ),
    Case(
        "yaml",
        "/config.yaml",
        "name: demo\nversion: 1\ntags:\n  - a\n  - b\n",
        ("version: 1", "version: [1"),
        ("name: demo", "name: 'demo"),
    ),
    Case(
        "toml",
        "/Cargo.toml",
        '[package]\nname = "demo"\nversion = "1.0"\n\n[deps]\nx = 1\n',
        ('version = "1.0"', 'version = "1.0'),
        ("x = 1", "x = = 1"),
    ),
    Case(
        "go",
        "/main.go",
        "package main\n\nfunc add(a int, b int) int {\n\treturn a + b\n}\n\n"
        "func main() {\n\tprintln(add(1, 2))\n}\n",
        ("return a + b", "return a +"),
        ("println(add(1, 2))", "println(add(1, 2)))"),
    ),
    Case(
        "rust",
        "/main.rs",
        'fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\nfn main() {\n    println!("{}", add(1, 2));\n}\n',
        ("a + b", "a + "),
        ('println!("{}", add(1, 2));', 'println!("{}", add(1, 2)));'),
    ),
    Case(
        "java",
        "/Main.java",
        "class Main {\n    static int add(int a, int b) {\n        return a + b;\n    }\n\n"
        "    public static void main(String[] args) {\n"
        "        System.out.println(add(1, 2));\n    }\n}\n",
        ("return a + b;", "return a + ;"),
        ("System.out.println(add(1, 2));", "System.out.println(add(1, 2)));"),
    ),
    Case(
        "kotlin",
        "/Main.kt",
        "fun add(a: Int, b: Int): Int {\n    return a + b\n}\n\nfun main() {\n    println(add(1, 2))\n}\n",
        ("return a + b", "return a + "),
        ("println(add(1, 2))", "println(add(1, 2)))"),
    ),
    Case(
        "c",
        "/main.c",
        "int add(int a, int b) {\n    return a + b;\n}\n\nint main(void) {\n    return add(1, 2);\n}\n",
        ("return a + b;", "return a + ;"),
        ("return add(1, 2);", "return add(1, 2));"),
    ),
    Case(
        "cpp",
        "/main.cpp",
        "int add(int a, int b) {\n    return a + b;\n}\n\nint main() {\n    return add(1, 2);\n}\n",
        ("return a + b;", "return a + ;"),
        ("return add(1, 2);", "return add(1, 2));"),
    ),
    Case(
        "csharp",
        "/Program.cs",
        "class Program {\n    static int Add(int a, int b) {\n        return a + b;\n    }\n\n"
        "    static void Main() {\n        System.Console.WriteLine(Add(1, 2));\n    }\n}\n",
        ("return a + b;", "return a + b"),
        ("System.Console.WriteLine(Add(1, 2));", "System.Console.WriteLine(Add(1, 2)));"),
    ),
    Case(
        "ruby",
        "/app.rb",
        "def add(a, b)\n  a + b\nend\n\nputs add(1, 2)\n",
        ("a + b", "a + b)"),
        ("puts add(1, 2)", "puts add(1, 2))"),
    ),
    Case(
        "php",
        "/index.php",
        "<?php\nfunction add($a, $b) {\n    return $a + $b;\n}\n\necho add(1, 2);\n",
        ("return $a + $b;", "return $a + ;"),
        ("echo add(1, 2);", "echo add(1, 2));"),
    ),
    Case(
        "bash",
        "/run.sh",
        "add() {\n  echo $(( $1 + $2 ))\n}\n\nadd 1 2\n",
        ("echo $(( $1 + $2 ))", "echo ) $1"),
        ("add 1 2", "add 1 2 )"),
    ),
    Case(
        "html",
        "/index.html",
        "<!DOCTYPE html>\n<html>\n<body>\n<p>Hello</p>\n</body>\n</html>\n",
        ("<p>Hello</p>", "<p>Hello</>"),
        ("<body>", "<body <"),
    ),
    Case(
        "css",
        "/style.css",
        "body {\n  color: red;\n}\n\np {\n  margin: 0;\n}\n",
        ("color: red;", "color red;"),
        ("margin: 0;", "margin 0 ;"),
    ),
]

IDS = [case.language for case in CASES]
