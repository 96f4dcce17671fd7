#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Markdown source of one man page, from docs/reference/cli.md, for pandoc (-s -t man).

  make_man.py CLI_MD PROGRAM VERSION > PROGRAM.1.md

Takes the `## PROGRAM` section of the page: its `###` sections become the man page's sections
(NAME, SYNOPSIS, ...), links become their text (a man page cannot follow a relative link), and a
pandoc title block names the page PROGRAM(1).
"""
import re
import sys


def main():
    source, program, version = sys.argv[1:4]
    text = open(source, encoding="utf-8").read()
    sections = re.split(r"^## ", text, flags=re.M)
    body = next((s for s in sections[1:] if s.split("\n", 1)[0].strip() == program), None)
    if body is None:
        sys.exit("make_man.py: no '## %s' section in %s" % (program, source))
    body = body.split("\n", 1)[1]
    out, fence = [], False
    for line in body.split("\n"):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            m = re.match(r"^### (.*)$", line)
            if m:
                line = "# " + m.group(1).upper()
            line = re.sub(r"(?<!!)\[([^\]]*)\]\([^)\s]+\)", r"\1", line)
        out.append(line)
    if fence:
        sys.exit("make_man.py: unterminated code block in the %s section" % program)
    title = "%% %s(1) idemgate %s | User Commands\n%%\n%%\n\n" % (program.upper(), version)
    sys.stdout.write(title + "\n".join(out).strip() + "\n")


if __name__ == "__main__":
    main()
