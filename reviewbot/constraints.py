"""`python -m reviewbot.constraints` prints the path of the pinned dependencies of the review
path (reviewbot/data/constraints.txt, made by scripts/constraints.py), for a CI job:

    pip install --no-deps "$REVIEWBOT_PACKAGE"
    pip install -r "$(python -m reviewbot.constraints)"

It imports nothing but the standard library: it runs before the dependencies are installed.
"""

from importlib.resources import files

if __name__ == "__main__":
    print(files("reviewbot.data").joinpath("constraints.txt"))
