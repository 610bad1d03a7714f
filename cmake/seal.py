#!/usr/bin/env python3
"""The IR's seal, checked as each source of a sealed layer compiles (the
CMake compiler launcher of graphrw_analysis, _fold, _pattern, _pass, _popart
and _passes; cmake/Seal.cmake). C++ lets any code cast const away, so types
alone cannot keep a pass from editing a tensor, an attribute or a node's
proto behind the Rewriter's back; the build refuses the ways to do it:
  - const_cast;
  - reinterpret_cast and std::bit_cast to a pointer or reference that is not
    to const, and C-style casts to void* (-Werror=cast-qual catches the other
    C-style casts that drop const);
  - #define of a keyword (private, class, const, ...).
A refusal is printed as a compiler error (FILE:LINE: error: ...) and the
object is not built; otherwise the compiler runs as given.

  seal.py [LAUNCHER...] COMPILER ARGS...

The source being compiled is read, and the headers beside it (every header
of a sealed layer sits in a folder with sources, so each is read when they
compile). `#if PROBE == N` blocks (tests/arch/ir_edit_probe.cpp) are read for
the PROBE the command defines."""
import os, re, sys

KEYWORDS = r"(private|protected|public|class|struct|const|mutable|friend|operator|this)"
RULES = [
    (re.compile(r"\bconst_cast\b"), "const_cast in a sealed layer: edit the IR through ir::Rewriter"),
    (re.compile(r"\breinterpret_cast\s*<\s*(?!const\b)[^<>]*[*&]\s*>"),
     "reinterpret_cast to a pointer or reference that is not to const"),
    (re.compile(r"\bbit_cast\s*<\s*(?!const\b)[^<>]*[*&]\s*>"), "std::bit_cast to a pointer that is not to const"),
    (re.compile(r"(?<!sizeof)\(\s*void\s*\*\s*\)\s*[\w&(*]"), "a C-style cast to void*"),
    (re.compile(r"^\s*#\s*define\s+" + KEYWORDS + r"\b"), "#define of a keyword"),
]


def code_lines(text):
    """The source's lines with comments, string and character literals blanked."""
    out, i, n = [], 0, len(text)
    buf = []
    state = None
    while i < n:
        c = text[i]
        if state is None:
            if text.startswith("//", i):
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if text.startswith("/*", i):
                j = text.find("*/", i + 2)
                seg = text[i:(n if j < 0 else j + 2)]
                buf.append(re.sub(r"[^\n]", " ", seg))
                i = n if j < 0 else j + 2
                continue
            m = re.match(r'R"([^(\s]*)\(', text[i:i + 20])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                seg = text[i:(n if end < 0 else end + len(m.group(1)) + 2)]
                buf.append(re.sub(r"[^\n]", " ", seg))
                i += len(seg)
                continue
            if c in "\"'":
                state = c
                buf.append(" ")
                i += 1
                continue
            buf.append(c)
        else:
            if c == "\\":
                buf.append("  ")
                i += 2
                continue
            if c == state:
                state = None
            buf.append("\n" if c == "\n" else " ")
        i += 1
    return "".join(buf).split("\n")


def active(lines, probe):
    """Lines inside `#if PROBE == N` blocks for other N are blanked."""
    stack, out = [], []
    for line in lines:
        m = re.match(r"\s*#\s*(if|elif)\s+PROBE\s*==\s*(\d+)\s*$", line)
        if m:
            if m.group(1) == "if":
                stack.append([False, True])
            on = not stack[-1][0] and probe == m.group(2)
            stack[-1] = [stack[-1][0] or on, on]
            out.append("")
            continue
        if stack and re.match(r"\s*#\s*else\b", line):
            stack[-1] = [True, not stack[-1][0]]
            out.append("")
            continue
        if stack and re.match(r"\s*#\s*endif\b", line):
            stack.pop()
            out.append("")
            continue
        if stack and re.match(r"\s*#\s*if", line):
            stack.append([True, all(s[1] for s in stack)])  # another condition nested in a probe block: kept
            out.append(line if all(s[1] for s in stack) else "")
            continue
        out.append(line if all(s[1] for s in stack) else "")
    return out


def main(argv):
    args = argv[1:]
    source = None
    probe = None
    for k, a in enumerate(args):
        if a == "-c" and k + 1 < len(args):
            source = args[k + 1]
        m = re.match(r"-DPROBE=(\d+)$", a)
        if m:
            probe = m.group(1)
    if source and source.endswith((".cpp", ".cc")) and os.path.isfile(source):
        folder = os.path.dirname(source)
        headers = sorted(os.path.join(folder, h) for h in os.listdir(folder) if h.endswith(".h"))
        errors = []
        for path in [source] + headers:
            with open(path, errors="replace") as f:
                lines = active(code_lines(f.read()), probe)
            for lineno, line in enumerate(lines, 1):
                for pattern, why in RULES:
                    if pattern.search(line):
                        errors.append(f"{path}:{lineno}: error: {why} [graphrw-seal]")
        if errors:
            sys.stderr.write("\n".join(errors) + "\n")
            return 1
    os.execvp(args[0], args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
