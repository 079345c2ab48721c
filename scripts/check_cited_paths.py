#!/usr/bin/env python3
"""Fails when a comment or a Markdown link cites a repository path that does not exist.

Scans the comments of the tracked sources (*.cpp *.hpp *.h *.cu, CMakeLists.txt, *.cmake, *.sh, *.py) for paths
such as measure/mpi/comm.cpp or docs/validation.md, and the local links of the tracked Markdown files, and prints
one line per miss, "file:line: cites missing path P", exiting 1 if there is any.
  scripts/check_cited_paths.py [REPO]   (REPO: default, the folder above this script; CTest runs it as
                                         repo.cited_paths)
What is not a citation of a file in this tree, and so is not checked: text in string literals, globs and
placeholders (tests/core/*.cpp, <unit>_test.cpp), paths inside URLs, paths git ignores (the files dsgd calibrate
writes), and Markdown links into ../shared/ beside the repository (not part of every checkout).
A path is found if it exists from the repository root or from the citing file's folder or one above it (a comment
in tests/core/ may say core/json_test.cpp).
"""

import os
import re
import subprocess
import sys

FOLDERS = ("core", "algorithms", "platforms", "measure", "simulate", "reports", "app", "tests", "scripts", "docs",
           "cmake")
EXTENSIONS = ("cpp", "hpp", "h", "cu", "cuh", "in", "cmake", "txt", "md", "sh", "py", "json", "supp", "csv")
# A path starts a token (not inside a URL or a longer path) and is made only of path characters, so a glob or a
# placeholder (*, <, {) stops it before it reaches an extension.
PATH = re.compile(r"(?<![\w./:-])((?:(?:%s)/[\w./-]*?|)[\w-]+\.(?:%s))(?![\w-])" %
                  ("|".join(FOLDERS), "|".join(EXTENSIONS)))
BARE = ("README.md", "CMakeLists.txt")  # cited without a folder: the root's, or the citing folder's
# A placeholder such as platforms/catalog/NAME.json: a file name in capitals that is none of these.
CAPITAL_NAMES = ("README", "LICENSE", "DESIGN", "STYLE")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        return [name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [s for s in subfolders if not s.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
        return files


def ignored(root, paths):
    """The paths among `paths` that git ignores (outputs such as platforms/this-machine.json)."""
    if not paths:
        return set()
    try:
        out = subprocess.run(["git", "-C", root, "check-ignore", "--no-index", "--stdin", "-z"],
                             input="\0".join(paths).encode(), capture_output=True).stdout
        return {name for name in out.decode().split("\0") if name}
    except OSError:
        return set()


def c_comments(text):
    """(line, comment text) of a C++ or CUDA source's comments; string and character literals are skipped."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield line, text[i:end]
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k, part in enumerate(text[i:end].split("\n")):
                yield line + k, part
            line += text.count("\n", i, end)
            i = end
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or
                                                                          text[i - 1] == "_")):
            delimiter = text[i + 2:text.find("(", i + 2)]
            end = text.find(")" + delimiter + '"', i)
            end = n if end < 0 else end + len(delimiter) + 2
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # 1'000 is a digit separator
            k = i + 1
            while k < n and text[k] != c and text[k] != "\n":
                k += 2 if text[k] == "\\" else 1
            i = k + 1
        else:
            i += 1


def hash_comments(text, quotes):
    """(line, comment text) of a CMake or shell file's # comments, outside quoted strings."""
    quote = None
    for number, line in enumerate(text.split("\n"), 1):
        i = 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\" and quote != "'":
                    i += 1
                elif c == quote:
                    quote = None
            elif c in quotes:
                quote = c
            elif c == "#" and (i == 0 or line[i - 1] in " \t(;"):
                yield number, line[i:]
                break
            i += 1


def markdown_links(text):
    """(line, target) of a Markdown file's links, outside fenced code blocks and code spans."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in MARKDOWN_LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            yield number, match.group(1)


def exists_from(root, folder, path):
    """Whether `path` exists from the root or from `folder` (relative to the root) or a folder above it."""
    while True:
        if os.path.exists(os.path.join(root, folder, path)):
            return True
        if not folder:
            return False
        folder = os.path.dirname(folder)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    misses = []  # (file, line, path)
    for name in tracked_files(root):
        base = os.path.basename(name)
        kind = ("c" if base.endswith((".cpp", ".hpp", ".h", ".cu", ".cuh")) else
                "cmake" if base == "CMakeLists.txt" or base.endswith(".cmake") else
                "shell" if base.endswith((".sh", ".py")) else
                "markdown" if base.endswith(".md") else None)
        if kind is None:
            continue
        try:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as file:
                text = file.read()
        except OSError:
            continue
        folder = os.path.dirname(name)
        if kind == "markdown":
            for line, target in markdown_links(text):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                    continue  # a URL, a mail address or a heading of the same file
                path = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(root, folder, path))
                shared = os.path.normpath(os.path.join(root, "..", "shared"))
                if resolved == shared or resolved.startswith(shared + os.sep):
                    continue
                if not os.path.exists(resolved):
                    misses.append((name, line, target))
            continue
        comments = (c_comments(text) if kind == "c" else
                    hash_comments(text, '"') if kind == "cmake" else hash_comments(text, "\"'"))
        for line, comment in comments:
            for match in PATH.finditer(comment):
                path = match.group(1).rstrip(".")
                if "/" not in path and path not in BARE:
                    continue
                stem = os.path.basename(path).split(".")[0]
                if re.fullmatch(r"[A-Z][A-Z0-9_]*", stem) and stem not in CAPITAL_NAMES:
                    continue
                if not exists_from(root, folder, path):
                    misses.append((name, line, path))
    skipped = ignored(root, sorted({path for _, _, path in misses}))
    misses = [miss for miss in misses if miss[2] not in skipped]
    for name, line, path in misses:
        print("%s:%d: cites missing path %s" % (name, line, path))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
