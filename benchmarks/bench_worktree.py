"""What a --worktree run costs: making its worktree and the final commit, in ms, on a
repository of N files (10,000 by default), through the same git adapter the runner uses.

    .venv/bin/python benchmarks/bench_worktree.py [--files N] [--rounds R]

Per round: `Git.add` (git worktree add -b li/<id> under .git/li-worktrees, the checkout of N
files) and `Git.commit_all` after the work changed 10 files (git add --all, commit, numstat and
the binary patch). Prints the median and the worst of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lionrun.adapters.git import Git  # noqa: E402
from lionrun.domain.worktree import branch_for, worktree_path  # noqa: E402


def make_repo(root: str, files: int) -> str:
    repo = os.path.join(root, "repo")
    os.makedirs(repo)
    for n in range(files):
        folder = os.path.join(repo, f"d{n // 500:03d}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"f{n:05d}.txt"), "w") as handle:
            handle.write(f"file {n}\n" * 20)
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    git = Git()
    with tempfile.TemporaryDirectory() as root:
        repo = make_repo(root, args.files)
        found = git.locate(repo)
        assert found is not None
        base = git.resolve(repo, "HEAD")
        made, committed = [], []
        for n in range(args.rounds):
            run_id = f"20260101T000000-{n:06x}"
            path = worktree_path(found.common_dir, run_id)
            began = time.perf_counter()
            git.add(repo, path, branch_for(run_id), base)
            made.append((time.perf_counter() - began) * 1000)
            for k in range(10):
                with open(os.path.join(path, f"d{k:03d}", f"f{k * 500:05d}.txt"), "a") as handle:
                    handle.write("changed by the work\n")
            began = time.perf_counter()
            result = git.commit_all(path, base, f"li run {run_id}")
            committed.append((time.perf_counter() - began) * 1000)
            assert result.commit is not None
        print(f"repository of {args.files} files, {args.rounds} rounds")
        print(f"worktree creation: median {statistics.median(made):.0f} ms, worst {max(made):.0f} ms")
        print(f"final commit (10 files changed): median {statistics.median(committed):.0f} ms, "
              f"worst {max(committed):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
