#!/usr/bin/env python3
"""CI runs the README's two commands as the README writes them:
- README.md opens with one ```sh block of exactly two commands, read here by
  this file's own parser: the first sets up and runs the tool, the second sets
  up and runs the test suite;
- `.ci/run` in dry-run mode (GRAPHRW_CI_DRY_RUN=1) names, in order, the first
  command in a fresh clone, the second in the checkout, then the sanitizer
  run, and its commands are the README's byte for byte;
- it reads them from README.md at run time: on a copy of .ci/ beside an edited
  README it runs the edited commands;
- `.ci/readme-commands` refuses a block of another size, or a command that
  goes on over a line;
- the README names the C++ standard CMakeLists.txt sets, and the compilers;
- `.ci/run` for real on a toy repository: the first command in a fresh clone,
  the second and the sanitizer run in the checkout, a compiler warning or a
  failing command stops it.
Prints "N passed, N failed"."""
import os, pathlib, re, shutil, subprocess, sys, tempfile

root = pathlib.Path(__file__).resolve().parents[2]
passed = failed = 0


def check(ok, message):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED:", message)


def readme_block(text):
    """The lines of the first ```sh block that are not blank."""
    m = re.search(r"^```sh[ \t]*\n(.*?)^```", text, re.M | re.S)
    return [line for line in m.group(1).split("\n") if line.strip()] if m else []


def dry_run(folder):
    env = dict(os.environ, GRAPHRW_CI_DRY_RUN="1")
    r = subprocess.run(["bash", str(folder / ".ci/run")], capture_output=True, text=True, env=env)
    return r.returncode, [line.split("\t") for line in r.stdout.splitlines()], r.stderr


readme = (root / "README.md").read_text()
commands = readme_block(readme)
check(len(commands) == 2, f"README.md's first ```sh block has {len(commands)} commands, not 2: {commands}")
check(readme.index("```sh") < readme.index("\n## "), "the set-up block is not the README's opening")
if len(commands) == 2:
    check("bash .ci/bootstrap --tool" in commands[0] and "build/tools/graphrw/graphrw" in commands[0],
          f"the first command does not set up and run the tool: {commands[0]}")
    check(re.search(r"bash \.ci/bootstrap( |$)", commands[1]) and "ctest" in commands[1],
          f"the second command does not set up and run the tests: {commands[1]}")

# The README names the C++ standard CMakeLists.txt sets, and the compilers.
standard = re.search(r"set\(CMAKE_CXX_STANDARD (\d+)\)", (root / "CMakeLists.txt").read_text())
check(standard and f"C++{standard.group(1)}" in readme, f"README.md does not say C++{standard and standard.group(1)}")
check("GCC 12" in readme and "Clang 14" in readme, "README.md does not name the compilers")

rc, phases, err = dry_run(root)
check(rc == 0, f".ci/run's dry run exited {rc}: {err}")
check([p[0] for p in phases] == ["readme-1", "readme-2", "sanitize"], f".ci/run's phases: {phases}")
if len(phases) == 3 and len(commands) == 2:
    check(phases[0][1:] == ["<fresh clone>", commands[0]], f"the first phase is not the README's first command in a fresh clone: {phases[0]}")
    check(phases[1][1:] == [".", commands[1]], f"the second phase is not the README's second command here: {phases[1]}")
    check(phases[2][1:] == [".", "bash .ci/sanitize"], f"the third phase: {phases[2]}")

with tempfile.TemporaryDirectory() as tmp:
    copy = pathlib.Path(tmp)
    shutil.copytree(root / ".ci", copy / ".ci")
    edited = ["echo one && true", "echo two"]
    (copy / "README.md").write_text("# x\n\n```sh\n" + "\n".join(edited) + "\n```\n\n## More\n\n```sh\nignored\n```\n")
    rc, phases, err = dry_run(copy)
    check(rc == 0 and [p[2] for p in phases[:2]] == edited, f"an edited README's commands are not what .ci/run runs: {phases} {err}")
    for body, why in ((["a", "b", "c"], "three commands"), (["a"], "one command"), (["a \\", "b"], "a continued line")):
        (copy / "README.md").write_text("```sh\n" + "\n".join(body) + "\n```\n")
        r = subprocess.run(["bash", str(copy / ".ci/readme-commands")], capture_output=True, text=True)
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and "readme-commands:" in r.stderr,
              f"readme-commands accepted {why}: exit {r.returncode}, {r.stderr!r}")
        rc, phases, err = dry_run(copy)
        check(rc != 0 and not phases, f".ci/run went on with {why}: {phases}")

# .ci/run for real on a toy repository whose README's commands and .ci/sanitize are stand-ins: the
# first runs in a fresh clone (it sees only committed files), the second here, then the sanitizer
# run; a compiler warning in what a phase prints fails it, and nothing runs after it.
with tempfile.TemporaryDirectory() as tmp:
    repo = pathlib.Path(tmp) / "repo"
    (repo / ".ci").mkdir(parents=True)
    for name in ("run", "readme-commands"):
        shutil.copy(root / ".ci" / name, repo / ".ci" / name)
    (repo / ".ci/sanitize").write_text("echo sanitized > sanitized.txt\n")
    (repo / "committed.txt").write_text("x")

    def toy_run(first, second):
        (repo / "README.md").write_text(f"# toy\n\n```sh\n{first}\n{second}\n```\n")
        git = ["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@localhost"]
        subprocess.run(git + ["add", "-A"], check=True, capture_output=True)
        subprocess.run(git + ["commit", "-qm", "toy", "--allow-empty"], check=True, capture_output=True)
        for f in ("here.txt", "sanitized.txt", "uncommitted.txt"):
            (repo / f).unlink(missing_ok=True)
        (repo / "uncommitted.txt").write_text("y")
        env = {k: v for k, v in os.environ.items() if k != "GRAPHRW_CI_DRY_RUN"}
        return subprocess.run(["bash", str(repo / ".ci/run")], capture_output=True, text=True, env=env)

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    r = toy_run("test -f committed.txt && test ! -f uncommitted.txt && test \"$PWD\" != " + str(repo), "touch here.txt")
    check(r.returncode == 0, f".ci/run on the toy repository: exit {r.returncode}: {r.stdout} {r.stderr}")
    check((repo / "here.txt").exists() and (repo / "sanitized.txt").exists(),
          f"the second command or the sanitizer run did not run in the checkout: {r.stdout}")
    check(re.search(r"^ci: readme-1: passed in \d+ s$", r.stdout, re.M) and "ci: all passed in" in r.stdout,
          f"phase times not printed: {r.stdout}")
    r = toy_run("echo 'lib/x.cpp:42:7: warning: unused variable [-Wunused]'", "touch here.txt")
    check(r.returncode == 1 and "ci: readme-1: the build printed 1 compiler warnings; the first: lib/x.cpp:42:7" in r.stderr,
          f"a compiler warning did not fail the phase: exit {r.returncode}: {r.stderr}")
    check(not (repo / "here.txt").exists() and not (repo / "sanitized.txt").exists(), "phases ran after a failed one")
    r = toy_run("true", "exit 3")
    check(r.returncode != 0 and not (repo / "sanitized.txt").exists(), f"a failing second command did not stop CI: {r.returncode}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
