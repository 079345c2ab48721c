#!/usr/bin/env python3
"""Fails when a comment or a Markdown file cites a path that does not exist in the repository, or one outside it.

Scans the comments of the sources (*.cpp *.hpp *.h *.cu, CMakeLists.txt, *.cmake, *.sh, *.py) for paths such as
measure/mpi/comm.cpp or docs/validation.md, and the local links of the Markdown files, and prints one line per miss,
"file:line: cites missing path P" or "file:line: cites a path outside the repository: P", exiting 1 if there is any.
The files are those git tracks plus the untracked ones it does not ignore (so a new doc is checked before it is
added).
  scripts/check_cited_paths.py [REPO]   (REPO: default, the folder above this script; CTest runs it as
                                         scripts/check_cited_paths)
Outside the repository: a Markdown link, or a ../ path in a comment or in Markdown text, that resolves above the
repository root (a clone has nothing there), and a citation of a design or style document by a bare name (DESIGN.md,
STYLE.md) that is not in the tree.
What is not a citation of a file in this tree, and so is not checked: text in string literals, fenced code blocks,
globs and placeholders (tests/core/*.cpp, <unit>_test.cpp), paths inside URLs, absolute paths in comments, and paths
git ignores (the files dsgd calibrate writes).
A path is found if it exists from the repository root or from the citing file's folder or one above it (a comment
in tests/core/ may say core/json_test.cpp); a ../ path and a Markdown link resolve from the citing file's folder.
"""

import os
import re
import subprocess
import sys

FOLDERS = ("core", "algorithms", "platforms", "measure", "simulate", "reports", "app", "tests", "scripts", "docs",
           "cmake", "examples")
EXTENSIONS = ("cpp", "hpp", "h", "cu", "cuh", "in", "cmake", "txt", "md", "sh", "py", "json", "supp", "csv")
# A path starts a token (not inside a URL or a longer path) and is made only of path characters, so a glob or a
# placeholder (*, <, {) stops it before it reaches an extension.
PATH = re.compile(r"(?<![\w./:-])((?:(?:%s)/[\w./-]*?|)[\w-]+\.(?:%s))(?![\w-])" %
                  ("|".join(FOLDERS), "|".join(EXTENSIONS)))
# Cited without a folder: the root's, or the citing folder's. The design and style documents' names are here so that
# citing one that is not in the tree fails.
BARE = ("README.md", "CMakeLists.txt", "DESIGN.md", "STYLE.md")
# A placeholder such as platforms/catalog/NAME.json: a file name in capitals that is none of these.
CAPITAL_NAMES = ("README", "LICENSE", "DESIGN", "STYLE")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# A relative path that climbs out of its folder (it starts with two dots and a slash), starting a token.
PARENT_PATH = re.compile(r"(?<![\w./:-])((?:\.\./)+[\w.-][\w./-]*)")
# A design or style document cited by its bare name in Markdown text.
BARE_DOCUMENT = re.compile(r"(?<![\w./:-])((?:DESIGN|STYLE)\.md)(?![\w-])")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        return sorted({name for name in out.decode().split("\0") if name})
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


def markdown_lines(text):
    """(line number, line) of a Markdown file outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def markdown_links(text):
    """(line, target) of a Markdown file's links, outside fenced code blocks and code spans."""
    for number, line in markdown_lines(text):
        for match in MARKDOWN_LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            yield number, match.group(1)


def markdown_text(text):
    """(line, text) of a Markdown file outside fenced code blocks, its links' targets left out (code spans kept)."""
    for number, line in markdown_lines(text):
        yield number, MARKDOWN_LINK.sub("", line)


def inside(root, path):
    """Whether the normalised absolute `path` is the repository root or below it."""
    return path == root or path.startswith(root + os.sep)


def parent_paths(root, folder, text):
    """(path, resolved, whether it is inside the repository) of each ../ path in `text`, from `folder`."""
    for match in PARENT_PATH.finditer(text):
        path = match.group(1).rstrip(".")
        resolved = os.path.normpath(os.path.join(root, folder, path))
        yield path, resolved, inside(root, resolved)


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
    outside = []  # (file, line, path): cited paths above the repository root
    climbing = []  # (file, line, path as cited, path from the root): ../ paths inside the repository that are missing
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

        def check_parent_paths(line, prose):
            """Files' ../ paths in a line of prose or a comment: outside the repository, or missing in it."""
            for path, resolved, within in parent_paths(root, folder, prose):
                if not within:
                    outside.append((name, line, path))
                elif not os.path.exists(resolved):
                    climbing.append((name, line, path, os.path.relpath(resolved, root)))

        if kind == "markdown":
            for line, target in markdown_links(text):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                    continue  # a URL, a mail address or a heading of the same file
                path = target.split("#", 1)[0]
                base = root if path.startswith("/") else os.path.join(root, folder)  # "/docs/x.md": from the root
                resolved = os.path.normpath(os.path.join(base, path.lstrip("/")))
                if not inside(root, resolved):
                    outside.append((name, line, target))
                elif not os.path.exists(resolved):
                    misses.append((name, line, target))
            for line, prose in markdown_text(text):
                check_parent_paths(line, prose)
                for match in BARE_DOCUMENT.finditer(prose):
                    if not exists_from(root, folder, match.group(1)):
                        misses.append((name, line, match.group(1)))
            continue
        comments = (c_comments(text) if kind == "c" else
                    hash_comments(text, '"') if kind == "cmake" else hash_comments(text, "\"'"))
        for line, comment in comments:
            check_parent_paths(line, comment)
            for match in PATH.finditer(comment):
                path = match.group(1).rstrip(".")
                if "/" not in path and path not in BARE:
                    continue
                stem = os.path.basename(path).split(".")[0]
                if re.fullmatch(r"[A-Z][A-Z0-9_]*", stem) and stem not in CAPITAL_NAMES:
                    continue
                if not exists_from(root, folder, path):
                    misses.append((name, line, path))
    skipped = ignored(root, sorted({path for _, _, path in misses} | {path for _, _, _, path in climbing}))
    misses = [miss for miss in misses if miss[2] not in skipped]
    misses += [(name, line, cited) for name, line, cited, path in climbing if path not in skipped]
    for name, line, path in misses:
        print("%s:%d: cites missing path %s" % (name, line, path))
    for name, line, path in outside:
        print("%s:%d: cites a path outside the repository: %s" % (name, line, path))
    return 1 if misses or outside else 0


if __name__ == "__main__":
    sys.exit(main())
