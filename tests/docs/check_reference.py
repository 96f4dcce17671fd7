#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The reference pages against the code they describe, in both directions:

  check_reference.py config   SOURCE_DIR --bin DIR  docs/reference/configuration.md: every key the
      loader accepts (`idemgate --print-keys`: the key tables of config/src/*_keys.cpp) has a row,
      every row is a key the loader accepts and its reload column is the one --print-keys gives
      it, every key `idemgate --print-config` prints has a row and each row's default is the one
      it prints over a minimal file.
  check_reference.py problems SOURCE_DIR   docs/reference/problems.md: one row per problem type of
      gateway/include/idemgate/gateway/problem_types.hpp with its slug, status and title, and the
      advice of the page the gateway serves for it (gateway/src/core/problem_pages.cpp).
  check_reference.py cli      SOURCE_DIR   docs/reference/cli.md: every option of idemgate's and
      idemgate-loadtest's --help text, and no option that is in neither.
  check_reference.py examples SOURCE_DIR --bin DIR   every YAML configuration in README.md and docs/
      (```yaml blocks, and the quick start's heredoc) passes `idemgate --check`: a fragment is
      completed with one upstream and one route; a block that names files (*_file: /...) is skipped.
  check_reference.py man      SOURCE_DIR   the man pages packaging/man/make_man.py and pandoc make
      from docs/reference/cli.md: each has its NAME and SYNOPSIS and every option of its --help
      (exit 77, skipped, without pandoc).

Each problem is printed with what to change; exit 1 if there is any.
"""
import os
import re
import subprocess
import sys

# Maps whose keys are names the user chooses: the reference writes them as <name> or <status>.
FREE_MAPS = {"upstreams": "<name>", "tenants": "<name>", "routes[].idempotency.on_status": "<status>"}
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def loader_keys(binary):
    """Every key the loader accepts, with whether it needs a restart: `idemgate --print-keys`."""
    out = subprocess.run([binary, "--print-keys"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise SystemExit("idemgate --print-keys failed: %s" % out.stderr)
    return dict(line.split() for line in out.stdout.splitlines())


def cells_of(line):
    """A Markdown table row's cells; `\\|` is a pipe inside a cell."""
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def table_rows(path, first_cell=re.compile(r"^\|\s*`([^`]+)`\s*\|")):
    rows, fence = [], False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else first_cell.match(line)
        if m:
            rows.append((number, m.group(1), cells_of(line)))
    return rows


DUPLICATES = []


def reference_keys(path):
    """The configuration table: the rows between '## Every key' and the next '## '."""
    rows, inside, fence = {}, False, False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        if line.startswith("## "):
            inside = line.startswith("## Every key")
            continue
        m = re.match(r"^\|\s*`([^`]+)`\s*\|", line) if inside else None
        if m:
            if m.group(1) in rows:
                DUPLICATES.append("docs/reference/configuration.md:%d: %s has a row already (line %d)" %
                                  (number, m.group(1), rows[m.group(1)][0]))
            rows[m.group(1)] = (number, cells_of(line))
    return rows


def generic(path):
    for prefix, name in FREE_MAPS.items():
        if path.startswith(prefix + ".") and path != prefix:
            rest = path[len(prefix) + 1:]
            tail = rest.partition(".")[2]
            return prefix + "." + name + ("." + tail if tail else "")
    return path


def printed_keys(binary, example):
    import yaml
    out = subprocess.run([binary, "-c", example, "--print-config"], capture_output=True, text=True,
                         timeout=30, env=dict(os.environ, IDEMGATE_ADMIN_TOKEN="x" * 32))
    if out.returncode != 0:
        raise SystemExit("idemgate --print-config failed: %s" % out.stderr)
    found = set()

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                p = (path + "." if path else "") + str(k)
                p = generic(p)
                found.add(p)
                walk(v, p)
        elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
            for item in node:
                walk(item, path + "[]")
    walk(yaml.safe_load(out.stdout), "")
    return found


# A configuration that sets nothing but what must be set: --print-config over it prints the defaults.
MINIMAL = """upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/api/", upstream: orders, idempotency: {} }
tenants:
  default: {}
"""
UNITS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000,
         "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def normal(value, text=False):
    """A default (the table's text, or a value --print-config printed) in comparable form:
    durations in ms, sizes in bytes."""
    import yaml
    if text:
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, str):
        m = re.fullmatch(r"(\d+)(ms|s|m|h|d|B|KiB|MiB|GiB)", value)
        if m:
            return int(m.group(1)) * UNITS[m.group(2)]
    return value


def printed_defaults(binary):
    """The defaults --print-config fills in, over MINIMAL once per store backend that has a
    section (it prints the chosen backend's section only)."""
    import tempfile
    import yaml
    found = {}
    for store in ("", "store: { type: redis }\n"):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(MINIMAL + store)
            f.flush()
            out = subprocess.run([binary, "-c", f.name, "--print-config"], capture_output=True, text=True,
                                 timeout=30)
        if out.returncode != 0:
            raise SystemExit("idemgate --print-config failed: %s" % out.stderr)
        walk_printed(yaml.safe_load(out.stdout), found)
    if "store.redis.address" not in found or "store.memory.max_entries" not in found:
        raise SystemExit("idemgate --print-config printed no store.redis or store.memory section")
    return found


def walk_printed(doc, found):

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, generic((path + "." if path else "") + str(k)))
        elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
            walk(node[0], path + "[]")
        else:
            found.setdefault(path, node)
    walk(doc, "")


def check_config(root, bin_dir):
    if not bin_dir:
        raise SystemExit("config: needs --bin DIR (the directory of the idemgate binary)")
    binary = os.path.join(bin_dir, "idemgate")
    problems = []
    ref = os.path.join(root, "docs", "reference", "configuration.md")
    accepted = loader_keys(binary)
    rows = reference_keys(ref)
    problems += DUPLICATES
    if not rows:
        problems.append("%s: no '## Every key' table" % ref)
    documented = set(rows)

    def covered(key):  # a block is documented through its keys' rows
        return key in documented or any(d.startswith(key + ".") or d.startswith(key + "[]") for d in documented)
    for key in sorted(accepted):
        if not covered(key):
            problems.append("%s: %s is accepted by the loader (idemgate --print-keys) and has no row: add one" %
                            (os.path.relpath(ref, root), key))
    for key, (number, cells) in sorted(rows.items()):
        if key not in accepted:
            problems.append("docs/reference/configuration.md:%d: %s is not a key the loader accepts "
                            "(idemgate --print-keys): remove or rename the row" % (number, key))
            continue
        reload = cells[3] if len(cells) > 3 else ""
        if not reload.startswith(accepted[key]):
            problems.append("docs/reference/configuration.md:%d: %s: the reload column says %r; "
                            "idemgate --print-keys makes it %s (config/src/*_keys.cpp)" %
                            (number, key, reload[:40], accepted[key]))
    # The default column against the defaults --print-config fills in.
    defaults = printed_defaults(binary)
    for key, (number, cells) in sorted(rows.items()):
        m = re.fullmatch(r"`([^`]*)`", cells[2]) if len(cells) > 2 else None
        if not m or key not in defaults:
            continue  # a default in words (the route's, absent), or a key printed only when set
        if normal(m.group(1), text=True) != normal(defaults[key]):
            problems.append("docs/reference/configuration.md:%d: %s: default %s, idemgate --print-config "
                            "says %r" % (number, key, cells[2], defaults[key]))
    for example in ("config/idemgate.example.yaml", "config/docker.yaml"):
        for key in sorted(printed_keys(binary, os.path.join(root, example))):
            if not covered(key):
                problems.append("docs/reference/configuration.md: %s (idemgate --print-config over %s) "
                                "has no row: add one" % (key, example))
    return problems, "%d keys the loader accepts, %d rows" % (len(accepted), len(rows))


STATUS = {"bad_request": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404,
          "method_not_allowed": 405, "request_timeout": 408, "conflict": 409, "payload_too_large": 413,
          "unprocessable_entity": 422, "too_many_requests": 429,
          "request_header_fields_too_large": 431, "not_implemented": 501, "bad_gateway": 502,
          "service_unavailable": 503, "gateway_timeout": 504}


def c_string(literals):
    return "".join(bytes(s, "utf-8").decode("unicode_escape") for s in STRING.findall(literals))


def check_problems(root):
    problems = []
    header = open(os.path.join(root, "gateway/include/idemgate/gateway/problem_types.hpp"), encoding="utf-8").read()
    pages = open(os.path.join(root, "gateway/src/core/problem_pages.cpp"), encoding="utf-8").read()
    defined = {}
    for m in re.finditer(r"inline constexpr problem (\w+)\s*\{\s*http::status::(\w+)\s*,(.*?)\}\s*;", header, re.S):
        strings = STRING.findall(m.group(3))
        if m.group(2) not in STATUS:
            problems.append("check_reference.py: add http::status::%s to STATUS" % m.group(2))
            continue
        defined[strings[0]] = (m.group(1), STATUS.get(m.group(2)), "".join(strings[1:]))
    advice = {}
    for m in re.finditer(r"problem_doc\s*\{\s*&p::(\w+)\s*,((?:\s*\"(?:[^\"\\]|\\.)*\")+)\s*\}", pages):
        advice[m.group(1)] = c_string(m.group(2))
    ref = os.path.join(root, "docs", "reference", "problems.md")
    rows = {slug: (n, cells) for n, slug, cells in table_rows(ref)}
    for slug, (name, status, title) in sorted(defined.items()):
        if slug not in rows:
            problems.append("docs/reference/problems.md: no row for %s (problems::%s): add one" % (slug, name))
            continue
        n, cells = rows[slug]
        where = "docs/reference/problems.md:%d: %s" % (n, slug)
        got = re.match(r"\d+", cells[1]) if len(cells) > 1 else None
        if not got or int(got.group(0)) != status:
            problems.append("%s: status %r, the gateway answers %d" % (where, cells[1] if len(cells) > 1 else "", status))
        if len(cells) < 3 or cells[2] != title:
            problems.append("%s: title %r, the gateway's is %r" % (where, cells[2] if len(cells) > 2 else "", title))
        if name in advice and (len(cells) < 4 or cells[3] != advice[name]):
            problems.append("%s: the advice differs from the page the gateway serves (problem_pages.cpp): %r" %
                            (where, advice[name]))
    for slug, (n, _) in sorted(rows.items()):
        if slug not in defined:
            problems.append("docs/reference/problems.md:%d: %s is not a problem type the gateway defines" % (n, slug))
    outcomes = check_outcomes(root, problems)
    return problems, "%d problem types, %d rows, %d outcomes" % (len(defined), len(rows), outcomes)


def check_outcomes(root, problems):
    """The access log's outcomes (to_string(outcome) in core/outcome.cpp) against the two places the
    documentation lists them: the access log reference's list and the contract's vocabulary table."""
    source = open(os.path.join(root, "gateway/src/core/outcome.cpp"), encoding="utf-8").read()
    names = set(re.findall(r'case outcome::\w+:\s*return "(\w+)";', source))
    if not names:
        problems.append("core/outcome.cpp: no `case outcome::...: return \"...\";` found (the check needs updating)")
        return 0
    logs = open(os.path.join(root, "docs/reference/logs.md"), encoding="utf-8").read()
    m = re.search(r"`outcome` \((`\w+`.*?); see", logs, re.S)
    listed = set(re.findall(r"`(\w+)`", m.group(1))) if m else set()
    for name in sorted(names - listed):
        problems.append("docs/reference/logs.md: the access log's outcome list lacks `%s`" % name)
    for name in sorted(listed - names):
        problems.append("docs/reference/logs.md: `%s` in the outcome list is not an outcome the gateway logs" % name)
    contract = open(os.path.join(root, "docs/guide/contract.md"), encoding="utf-8").read()
    table = contract.split("| what the gateway did with a keyed request | access log `outcome` |", 1)
    column = set()
    if len(table) == 2:
        for line in table[1].split("\n\n", 1)[0].splitlines():
            cells = line.split("|")
            if len(cells) > 2:
                column |= set(re.findall(r"`(\w+)`", cells[2]))
    for name in sorted(names - column):
        problems.append("docs/guide/contract.md: the vocabulary table has no row whose outcome is `%s`" % name)
    return len(names)


def check_cli(root):
    problems = []
    ref = os.path.join(root, "docs", "reference", "cli.md")
    doc = open(ref, encoding="utf-8").read()
    sections = {"idemgate": doc.split("\n## idemgate-loadtest")[0], "idemgate-loadtest": doc.split("\n## idemgate-loadtest")[-1]}
    sources = {"idemgate": "gateway/main.cpp", "idemgate-loadtest": "loadtest/src/usage.cpp"}
    total = 0
    for program, source in sources.items():
        text = open(os.path.join(root, source), encoding="utf-8").read()
        usage = re.search(r'R"\((.*?)\)"', text, re.S).group(1)
        flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", usage))
        documented = set(re.findall(r"^\|\s*`(-[^` ]+)", sections[program], re.M))
        documented |= {f for cell in re.findall(r"^\|\s*`([^|]*)\|", sections[program], re.M)
                       for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", cell)}
        total += len(flags)
        for f in sorted(flags - documented):
            problems.append("docs/reference/cli.md: %s %s (in %s's --help) has no row in the %s options table" %
                            (program, f, source, program))
        for f in sorted(documented - flags):
            problems.append("docs/reference/cli.md: %s %s is documented but not in %s's --help text" %
                            (program, f, source))
    return problems, "%d options" % total


def usage_flags(root, source):
    text = open(os.path.join(root, source), encoding="utf-8").read()
    usage = re.search(r'R"\((.*?)\)"', text, re.S).group(1)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", usage))


EXAMPLE_BASE = {"upstreams": {"orders": {"address": "127.0.0.1:8081"}},
                "routes": [{"path_prefix": "/api/", "upstream": "orders"}]}
EXAMPLE_ENV = {"IDEMGATE_KEY_SECRET": "k" * 32, "IDEMGATE_RECORD_KEY": "ab" * 32,
               "IDEMGATE_REDIS_PASSWORD": "password", "IDEMGATE_ADMIN_TOKEN": "t" * 32}


def check_examples(root, bin_dir):
    import tempfile
    import yaml
    if not bin_dir:
        raise SystemExit("examples: needs --bin DIR (the directory of the idemgate binary)")
    problems, checked, skipped = [], 0, 0
    pages = [os.path.join(root, "README.md")]
    for dirpath, _, names in os.walk(os.path.join(root, "docs")):
        pages += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".md")]
    with tempfile.TemporaryDirectory() as tmp:
        for page in pages:
            text = open(page, encoding="utf-8").read()
            blocks = [(m.start(), m.group(1)) for m in re.finditer(r"```yaml\n(.*?)```", text, re.S)]
            blocks += [(m.start(), m.group(1)) for m in re.finditer(r"<<'YAML'\n(.*?)\nYAML\n", text, re.S)]
            for start, block in blocks:
                where = "%s:%d" % (os.path.relpath(page, root), text.count("\n", 0, start) + 1)
                if re.search(r"_file:\s*/", block):
                    skipped += 1
                    continue
                try:
                    doc = yaml.safe_load(block)
                except yaml.YAMLError as e:
                    problems.append("%s: not YAML: %s" % (where, e))
                    continue
                if not isinstance(doc, dict):
                    continue
                own_upstreams = "upstreams" in doc
                for key, value in EXAMPLE_BASE.items():
                    doc.setdefault(key, value)
                for route in doc.get("routes") or []:  # a fragment's routes get the upstreams they name
                    if not own_upstreams and isinstance(route, dict) and route.get("upstream") not in doc["upstreams"]:
                        doc["upstreams"][route.get("upstream")] = {"address": "127.0.0.1:8081"}
                path = os.path.join(tmp, "example.yaml")
                with open(path, "w", encoding="utf-8") as f:
                    yaml.safe_dump(doc, f)
                out = subprocess.run([os.path.join(bin_dir, "idemgate"), "-c", path, "--check"], capture_output=True,
                                     text=True, timeout=30, env=dict(os.environ, **EXAMPLE_ENV))
                checked += 1
                if out.returncode != 0:
                    problems.append("%s: idemgate --check refuses this example: %s" %
                                    (where, " | ".join(out.stderr.strip().split("\n")[1:])))
    return problems, "%d examples checked, %d naming files skipped" % (checked, skipped)


def check_man(root):
    import shutil
    pandoc = shutil.which("pandoc")
    if not pandoc:
        print("man: pandoc is not installed (scripts/install-deps.sh installs it); skipped")
        sys.exit(77)
    problems = []
    for program, source in (("idemgate", "gateway/main.cpp"), ("idemgate-loadtest", "loadtest/src/usage.cpp")):
        md = subprocess.run([sys.executable, os.path.join(root, "packaging/man/make_man.py"),
                             os.path.join(root, "docs/reference/cli.md"), program, "0"],
                            capture_output=True, text=True, timeout=30)
        if md.returncode != 0:
            problems.append("make_man.py %s: %s" % (program, md.stderr.strip()))
            continue
        roff = subprocess.run([pandoc, "--standalone", "--from", "markdown", "--to", "man"], input=md.stdout,
                              capture_output=True, text=True, timeout=60)
        if roff.returncode != 0:
            problems.append("pandoc %s: %s" % (program, roff.stderr.strip()))
            continue
        page = roff.stdout
        if ".TH \"%s\" \"1\"" % program.upper() not in page:
            problems.append("%s(1): no .TH line naming %s(1)" % (program, program.upper()))
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS"):
            if ".SH %s" % section not in page:
                problems.append("%s(1): no %s section" % (program, section))
        if "%s \\- " % program.replace("-", "\\-") not in page and "%s - " % program not in page:
            problems.append("%s(1): the NAME line is not '%s - ...'" % (program, program))
        for flag in sorted(usage_flags(root, source)):
            if flag not in page and flag.replace("-", "\\-") not in page:
                problems.append("%s(1): %s (in its --help) is not in the page" % (program, flag))
    return problems, "2 man pages"


def main():
    what, root = sys.argv[1], os.path.abspath(sys.argv[2])
    bin_dir = sys.argv[sys.argv.index("--bin") + 1] if "--bin" in sys.argv else None
    problems, summary = {"config": lambda: check_config(root, bin_dir), "problems": lambda: check_problems(root),
                         "cli": lambda: check_cli(root),
                         "man": lambda: check_man(root),
                         "examples": lambda: check_examples(root, bin_dir)}[what]()
    for p in problems:
        print(p)
    print("%s: %s, %d problems" % (what, summary, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
