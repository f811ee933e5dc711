"""Lines of every function in plain JavaScript files, for the rule that no function of web/pinwheel/ is
longer than 150 lines. Run as `python3 Tests/browser/function_lengths.py web/pinwheel/*.js` to list the
longest; Tests/browser/test_web_modules.py holds the modules to it.

A small lexer, not a full parser: it skips comments, strings, template literals (with `${…}` inside)
and regular-expression literals (a `/` where an operand is expected), and matches braces. A brace opens
a function's body after `function name(…)`, after a method's `name(…)` (in a class or object) and after
`=>`; a function's lines run from the line of its name (the `=>` for an arrow) to its closing brace,
nested functions included, so an outer function is measured with everything inside it.
"""

import re
import sys
from dataclasses import dataclass

KEYWORDS_BEFORE_PAREN_BLOCK = {"if", "for", "while", "switch", "catch", "with"}
# After these an operand is expected, so a `/` starts a regular expression.
KEYWORDS_BEFORE_OPERAND = {"return", "typeof", "case", "in", "of", "new", "delete", "void", "throw", "yield",
                           "else", "do", "instanceof", "await"}
IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
NUMBER = re.compile(r"\d[\w.]*")


@dataclass
class Function:
    name: str
    first_line: int
    last_line: int

    @property
    def lines(self):
        return self.last_line - self.first_line + 1


@dataclass
class Token:
    text: str
    line: int
    kind: str  # 'name', 'number', 'punct', 'literal'


class Scanner:
    def __init__(self, source):
        self.s = source
        self.i = 0
        self.line = 1
        self.tokens = []
        # Open braces: ('block' | 'template' | Function being measured).
        self.braces = []
        # Open parentheses: index in `tokens` of the token before each `(`.
        self.parens = []
        # For the last `)`: index of the token before its `(`.
        self.paren_head = {}
        self.functions = []

    def error(self, what):
        raise ValueError(f"line {self.line}: {what}")

    def advance(self, n):
        self.line += self.s.count("\n", self.i, self.i + n)
        self.i += n

    def operand_expected(self):
        if not self.tokens:
            return True
        t = self.tokens[-1]
        if t.kind == "name":
            return t.text in KEYWORDS_BEFORE_OPERAND
        if t.kind in ("number", "literal"):
            return False
        return t.text not in (")", "]", "}")

    def scan(self):
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\n" or c.isspace():
                self.advance(1)
            elif s.startswith("//", self.i):
                end = s.find("\n", self.i)
                self.advance((len(s) if end < 0 else end) - self.i)
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                if end < 0:
                    self.error("unterminated comment")
                self.advance(end + 2 - self.i)
            elif c in "'\"":
                self.quoted(c)
            elif c == "`":
                self.advance(1)
                self.template()
            elif c == "/" and self.operand_expected():
                self.regex()
            elif m := IDENTIFIER.match(s, self.i):
                self.tokens.append(Token(m.group(), self.line, "name"))
                self.advance(len(m.group()))
            elif m := NUMBER.match(s, self.i):
                self.tokens.append(Token(m.group(), self.line, "number"))
                self.advance(len(m.group()))
            else:
                self.punct(c)
        if self.braces or self.parens:
            self.error("unbalanced brackets at end of file")
        return self.functions

    def quoted(self, quote):
        j = self.i + 1
        while j < len(self.s) and self.s[j] != quote:
            if self.s[j] == "\n":
                self.error("newline in a string")
            j += 2 if self.s[j] == "\\" else 1
        self.tokens.append(Token("''", self.line, "literal"))
        self.advance(j + 1 - self.i)

    def template(self):
        """Scans a template literal from just after its opening backtick (or a `}` closing a `${`)."""
        j = self.i
        while j < len(self.s):
            if self.s[j] == "\\":
                j += 2
            elif self.s[j] == "`":
                self.tokens.append(Token("``", self.line, "literal"))
                self.advance(j + 1 - self.i)
                return
            elif self.s.startswith("${", j):
                self.advance(j + 2 - self.i)
                self.braces.append("template")
                self.tokens.append(Token("${", self.line, "punct"))
                return
            else:
                j += 1
        self.error("unterminated template literal")

    def regex(self):
        j = self.i + 1
        in_class = False
        while j < len(self.s):
            ch = self.s[j]
            if ch == "\n":
                self.error("newline in a regular expression")
            if ch == "\\":
                j += 2
                continue
            if ch == "[":
                in_class = True
            elif ch == "]":
                in_class = False
            elif ch == "/" and not in_class:
                break
            j += 1
        m = IDENTIFIER.match(self.s, j + 1)
        end = m.end() if m else j + 1
        self.tokens.append(Token("//", self.line, "literal"))
        self.advance(end - self.i)

    def punct(self, c):
        if self.s.startswith("=>", self.i):
            self.tokens.append(Token("=>", self.line, "punct"))
            self.advance(2)
            return
        if c == "(":
            self.parens.append(len(self.tokens) - 1)
        elif c == ")":
            if not self.parens:
                self.error("unmatched )")
            self.paren_head[len(self.tokens)] = self.parens.pop()
        elif c == "{":
            self.braces.append(self.opened_function())
        elif c == "}":
            if not self.braces:
                self.error("unmatched }")
            top = self.braces.pop()
            if top == "template":
                self.advance(1)
                self.template()
                return
            if isinstance(top, Function):
                top.last_line = self.line
                self.functions.append(top)
        self.tokens.append(Token(c, self.line, "punct"))
        self.advance(1)

    def opened_function(self):
        """What the `{` about to be read opens: a Function when it is a function's body, else 'block'."""
        if not self.tokens:
            return "block"
        prev = self.tokens[-1]
        if prev.text == "=>":
            return Function(f"arrow at line {prev.line}", prev.line, 0)
        if prev.text != ")":
            return "block"
        head_index = self.paren_head.get(len(self.tokens) - 1, -1)
        if head_index < 0:
            return "block"
        head = self.tokens[head_index]
        before = self.tokens[head_index - 1] if head_index > 0 else None
        if head.text == "function" or (head.text == "*" and before is not None and before.text == "function"):
            # An anonymous function: named by the key it is assigned to (`name: function (`), if any.
            named = self.tokens[head_index - 2] if before is not None and before.text == ":" and head_index > 1 else None
            if named is not None and named.kind == "name":
                return Function(named.text, named.line, 0)
            return Function(f"function at line {head.line}", head.line, 0)
        if head.kind != "name" or head.text in KEYWORDS_BEFORE_PAREN_BLOCK:
            return "block"
        return Function(head.text, head.line, 0)


def functions_in(source):
    """Every function of a JavaScript source text, as Function(name, first_line, last_line)."""
    return Scanner(source).scan()


def members_read(source):
    """The names after a `.` in a JavaScript source text's code (not in its comments or strings)."""
    scanner = Scanner(source)
    scanner.scan()
    t = scanner.tokens
    return {t[i + 1].text for i in range(len(t) - 1) if t[i].text == "." and t[i + 1].kind == "name"}


def main(paths):
    found = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            found += [(fn.lines, path, fn) for fn in functions_in(f.read())]
    for lines, path, fn in sorted(found, key=lambda x: -x[0])[:10]:
        print(f"{lines:5d}  {path}:{fn.first_line}  {fn.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
