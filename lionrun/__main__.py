"""`python -m lionrun` is `li`."""

from lionrun.entrypoints.bootstrap import console

if __name__ == "__main__":
    console()
